//! The task launcher on ECS: runners are Fargate tasks started with RunTask.

use aws_sdk_ecs::error::ProvideErrorMetadata;
use aws_sdk_ecs::types::{
    AssignPublicIp, AwsVpcConfiguration, ContainerOverride, DesiredStatus, KeyValuePair, LaunchType,
    NetworkConfiguration, Tag, TaskOverride,
};

use crate::error::Error;
use strato_domain::ids::OperationId;
use strato_domain::messages::{ENV_FENCING_TOKEN, ENV_OPERATION_ID};
use strato_domain::model::Operation;
use strato_domain::ports::{LaunchFailure, PortError, TaskLauncher};
use strato_domain::run_proof::{ENV_RUN_PROOF, RunProofKey};
use strato_domain::telemetry::{ENV_CLUSTER_ID, ENV_TENANT_ID, ENV_TRACEPARENT, Traceparent, fields};

/// Where and how runners start. Read once per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerSettings {
    pub cluster: String,
    pub task_definition: String,
    pub container: String,
    pub subnets: Vec<String>,
    pub security_groups: Vec<String>,
    pub assign_public_ip: bool,
}

/// Starts runners on the ECS cluster `runner.cluster`, each with the proof of its run (`proofs`).
#[derive(Debug, Clone, Copy)]
pub struct EcsLauncher<'a> {
    pub ecs: &'a aws_sdk_ecs::Client,
    pub runner: &'a RunnerSettings,
    pub proofs: &'a RunProofKey,
}

impl TaskLauncher for EcsLauncher<'_> {
    async fn find_started(&self, op: &OperationId) -> Result<Option<String>, PortError> {
        let out = self
            .ecs
            .list_tasks()
            .cluster(&self.runner.cluster)
            .started_by(op.as_str())
            .desired_status(DesiredStatus::Running)
            .send()
            .await
            .map_err(|e| Error::aws("ListTasks", e))?;
        Ok(out.task_arns().first().cloned())
    }

    async fn launch(
        &self,
        operation: &Operation,
        fencing_token: u64,
        trace: Option<&Traceparent>,
    ) -> Result<String, LaunchFailure> {
        let op = &operation.operation_id;
        let r = self.runner;
        let env = |name: &str, value: String| KeyValuePair::builder().name(name).value(value).build();
        let vpc = AwsVpcConfiguration::builder()
            .set_subnets(Some(r.subnets.clone()))
            .set_security_groups(Some(r.security_groups.clone()))
            .assign_public_ip(if r.assign_public_ip {
                AssignPublicIp::Enabled
            } else {
                AssignPublicIp::Disabled
            })
            .build()
            .map_err(|e| LaunchFailure::Fatal(e.to_string()))?;
        let mut container = ContainerOverride::builder()
            .name(&r.container)
            .environment(env(ENV_OPERATION_ID, op.to_string()))
            .environment(env(ENV_FENCING_TOKEN, fencing_token.to_string()))
            .environment(env(ENV_RUN_PROOF, self.proofs.proof(op, fencing_token)))
            .environment(env(ENV_TENANT_ID, operation.tenant_id.to_string()))
            .environment(env(ENV_CLUSTER_ID, operation.cluster_id.to_string()));
        if let Some(tp) = trace {
            container = container.environment(env(ENV_TRACEPARENT, tp.to_string()));
        }
        let container = container.build();
        // Whose task it is, on the task itself (cost allocation, the console); RunTask with tags needs
        // ecs:TagResource.
        let tag = |k: &str, v: &str| Tag::builder().key(k).value(v).build();
        let tags = [
            tag(fields::TENANT_ID, operation.tenant_id.as_str()),
            tag(fields::CLUSTER_ID, operation.cluster_id.as_str()),
            tag(fields::OPERATION_ID, op.as_str()),
            tag(fields::OPERATION_KIND, operation.kind.as_str()),
        ];
        let res = self
            .ecs
            .run_task()
            .cluster(&r.cluster)
            .task_definition(&r.task_definition)
            .launch_type(LaunchType::Fargate)
            .count(1)
            // Lets ListTasks find this operation's task on redelivery; an op id (35 chars) fits ECS's 36.
            .started_by(op.as_str())
            // ECS starts one task per token: a repeated start of this operation under this lock (a delivery
            // that died after RunTask, before ListTasks lists the task — it is eventually consistent) gets
            // the same task back. A later lock (new token) may start a new one.
            .client_token(format!("{op}-{fencing_token}"))
            .network_configuration(NetworkConfiguration::builder().awsvpc_configuration(vpc).build())
            .overrides(TaskOverride::builder().container_overrides(container).build())
            .set_tags(Some(tags.to_vec()))
            .send()
            .await;
        let out = match res {
            Ok(out) => out,
            Err(e) => {
                let (code, message) = match e.as_service_error() {
                    Some(se) => (
                        se.code().map(str::to_owned),
                        se.message().unwrap_or_default().to_owned(),
                    ),
                    // Timeouts and connection failures never reached ECS.
                    None => (
                        Some("ServiceUnavailableException".to_owned()),
                        Error::aws("RunTask", e).to_string(),
                    ),
                };
                return Err(classify_error(code.as_deref(), &message));
            }
        };
        if let Some(arn) = out.tasks().first().and_then(|t| t.task_arn()) {
            return Ok(arn.to_owned());
        }
        let reasons: Vec<&str> = out.failures().iter().filter_map(|f| f.reason()).collect();
        let joined = if reasons.is_empty() {
            "RunTask started no task and gave no reason".to_owned()
        } else {
            reasons.join("; ")
        };
        match reasons.iter().map(|r| classify_failure(r)).next() {
            Some(LaunchFailure::Transient(_)) => Err(LaunchFailure::Transient(joined)),
            _ => Err(LaunchFailure::Fatal(joined)),
        }
    }
}

/// Classifies a RunTask error by its service error code and message.
pub fn classify_error(code: Option<&str>, message: &str) -> LaunchFailure {
    let transient_code = matches!(
        code,
        Some("ThrottlingException" | "ServerException" | "ServiceUnavailableException")
    );
    if transient_code || message.contains("Rate exceeded") {
        LaunchFailure::Transient(format!("{}: {message}", code.unwrap_or("error")))
    } else {
        LaunchFailure::Fatal(format!("{}: {message}", code.unwrap_or("error")))
    }
}

/// Classifies the `failures[].reason` RunTask returns when it accepted the call but placed no task.
pub fn classify_failure(reason: &str) -> LaunchFailure {
    if reason.starts_with("RESOURCE:") || reason.contains("Capacity is unavailable") {
        LaunchFailure::Transient(reason.to_owned())
    } else {
        LaunchFailure::Fatal(reason.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttling_and_capacity_are_transient_the_rest_fatal() {
        assert!(matches!(
            classify_error(Some("ThrottlingException"), "Rate exceeded"),
            LaunchFailure::Transient(_)
        ));
        assert!(matches!(
            classify_error(Some("ClientException"), "Rate exceeded"),
            LaunchFailure::Transient(_)
        ));
        assert!(matches!(
            classify_error(Some("ClientException"), "Unable to describe task definition."),
            LaunchFailure::Fatal(_)
        ));
        assert!(matches!(
            classify_failure(
                "Capacity is unavailable at this time. Please try again later or in a different availability zone"
            ),
            LaunchFailure::Transient(_)
        ));
        assert!(matches!(
            classify_failure("RESOURCE:MEMORY"),
            LaunchFailure::Transient(_)
        ));
        assert!(matches!(classify_failure("MISSING"), LaunchFailure::Fatal(_)));
    }
}
