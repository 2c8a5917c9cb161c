//! Metrics out of a Lambda or the runner: a process-wide recorder writing CloudWatch Embedded Metric Format
//! (one JSON document per label set) to stdout, which Lambda ships to CloudWatch Logs and CloudWatch turns
//! into the metrics of `strato_model::vitals`. Each Lambda flushes after every invocation.

use metrics_cloudwatch_embedded::{Builder, Collector};

/// The installed recorder. Metrics never stop a function: without one (a second install in the same
/// process) the macros are no-ops and [`Emf::flush`] does nothing.
#[derive(Clone, Copy)]
pub struct Emf(Option<&'static Collector>);

impl Emf {
    /// Installs the EMF recorder as the process's global one (namespace `Strato`) and gives every metric its
    /// unit.
    pub fn install() -> Self {
        Self::init(Builder::new())
    }

    /// [`Emf::install`] for a long process (the runner): also flushes every `every`, so a long run's metrics
    /// are not held to its end (and histograms stay under EMF's 100 values per document). Needs a Tokio
    /// runtime.
    pub fn install_flushing_every(every: std::time::Duration) -> Self {
        Self::init(Builder::new().with_auto_flush_interval(every))
    }

    fn init(builder: Builder) -> Self {
        match builder
            .cloudwatch_namespace(strato_model::vitals::NAMESPACE)
            .init()
        {
            Ok(c) => {
                strato_model::vitals::describe();
                Self(Some(c))
            }
            Err(e) => {
                tracing::warn!(error = %e, "metrics recorder not installed; no metrics from this process");
                Self(None)
            }
        }
    }

    /// Writes what was recorded since the last flush to stdout (EMF lines) and resets the counters.
    pub fn flush(self) {
        if let Some(c) = self.0
            && let Err(e) = c.flush(std::io::stdout().lock())
        {
            tracing::warn!(error = %e, "metrics not flushed");
        }
    }

    /// Runs `fut` (one invocation), then flushes: the invocation's metrics leave with its logs.
    pub async fn flushing<T>(self, fut: impl std::future::Future<Output = T>) -> T {
        let out = fut.await;
        self.flush();
        out
    }
}
