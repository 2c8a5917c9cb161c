use super::*;

#[test]
fn only_allocation_failures_count_as_out_of_memory() {
    assert!(is_out_of_memory("memory allocation of 1048576 bytes failed"));
    assert!(is_out_of_memory("fatal error: out of memory"));
    assert!(!is_out_of_memory("Killed"));
    assert!(!is_out_of_memory(
        "the memory allocation of the cache failed to be noticed at all"
    ));
}

#[test]
fn task_records_follow_a_runner_from_start_to_exit() {
    let stats = FargateStats::default();
    stats.record_start("arn:task/1", Some("op-1".into()), Some(42));
    assert_eq!(stats.running_pid("op-1"), Some(42));
    assert_eq!(stats.running_pid("op-2"), None);
    stats.record_end("arn:task/1", Some(137));
    assert_eq!(stats.running_pid("op-1"), None);
    let t = &stats.tasks()[0];
    assert_eq!((t.exit_code, t.pid), (Some(137), None));
    assert!(t.ended_at.is_some_and(|e| e >= t.started_at));
}
