//! Load through devstack's HTTP API: N clusters (`STRATO_LOAD_CLUSTERS`, default 20; the figure is
//! 100, see docs/performance.md "Load" and `examples/bench_load`) from 5 tenants at once, each tenant allowed 3
//! concurrent operations, with a one-resource template and the real runner and engine. All must reach
//! ACTIVE, no tenant may ever have more than 3 runners at a time (measured from the emulated Fargate's task
//! records, not from Strato's own bookkeeping), and nothing may be lost: one runner per operation, every
//! operation succeeded, no slot or lock left, no message in a dead-letter queue. Prints the time taken and
//! the peak concurrent runners.

use crate::devstack_support;
use crate::load_support;

use std::time::{Duration, Instant};

use load_support::{Load, TENANT_LIMIT, TENANTS};

const DEFAULT_CLUSTERS: usize = 20;

fn clusters_wanted() -> usize {
    match std::env::var("STRATO_LOAD_CLUSTERS") {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("STRATO_LOAD_CLUSTERS={v:?} is not a number of clusters")),
        _ => DEFAULT_CLUSTERS,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn many_clusters_from_five_tenants_reach_active_within_their_concurrency_limits() {
    let n = clusters_wanted();
    let config = load_support::config(devstack_support::config("ld").await);
    let load = Load::start(config, Vec::new(), n).await;

    // All at once: every create in flight together.
    let t0 = Instant::now();
    let created = load.create_all().await;
    let accepted = t0.elapsed();
    load.wait_all_active(t0).await;
    let all_active = t0.elapsed();

    let tasks = load.check_nothing_lost(&created).await;
    let (overall, per) = load.peaks(&created, &tasks);
    println!(
        "load: {n} clusters from {TENANTS} tenants (limit {TENANT_LIMIT} each): all accepted in {:.1} s, \
         all ACTIVE in {:.1} s; peak concurrent runners {overall} overall, per tenant {per:?}",
        accepted.as_secs_f64(),
        all_active.as_secs_f64()
    );
    load.stack.shutdown(Duration::from_secs(30)).await;
}
