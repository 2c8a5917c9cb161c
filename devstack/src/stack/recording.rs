//! Each function's own AWS clients: recorded under its name when the config asks for recording (the IAM
//! check of the devstack tests, `Devstack::aws_calls`), the stack's shared clients otherwise.

use std::path::PathBuf;

use strato_aws::aws::AwsClients;

use strato_calls::Observed;
use strato_calls::recorder::CallRecorder;

use super::{Devstack, StackEnv};

impl StackEnv {
    /// The AWS clients `function` runs with: its calls recorded under its name when recording.
    pub fn aws_for(&self, function: &str) -> AwsClients {
        match &self.recorder {
            Some(r) => self.aws.intercepted(&r.tagged(function)),
            None => self.aws.clone(),
        }
    }

    /// The ECS client `function` runs with (recorded like [`Self::aws_for`]).
    pub fn ecs_for(&self, function: &str) -> aws_sdk_ecs::Client {
        match &self.recorder {
            Some(r) => aws_sdk_ecs::Client::from_conf(
                aws_sdk_ecs::config::Builder::from(&self.aws.config)
                    .interceptor(r.tagged(function))
                    .build(),
            ),
            None => self.ecs.clone(),
        }
    }

    /// The WebSocket management client `function` posts frames with (recorded like [`Self::aws_for`]).
    pub fn management_for(&self, function: &str, endpoint: &str) -> aws_sdk_apigatewaymanagement::Client {
        let conf =
            aws_sdk_apigatewaymanagement::config::Builder::from(&self.aws.config).endpoint_url(endpoint);
        match &self.recorder {
            Some(r) => {
                aws_sdk_apigatewaymanagement::Client::from_conf(conf.interceptor(r.tagged(function)).build())
            }
            None => aws_sdk_apigatewaymanagement::Client::from_conf(conf.build()),
        }
    }

    /// Where runners append their recorded calls (a separate process each).
    pub fn runner_call_log(&self) -> PathBuf {
        self.work_dir.join("runner-aws-calls.jsonl")
    }
}

impl Devstack {
    /// Every AWS call recorded so far, by the in-process functions and the runners (when the config asked
    /// for recording; empty otherwise).
    pub fn aws_calls(&self) -> Vec<Observed> {
        let Some(r) = &self.env.recorder else {
            return Vec::new();
        };
        let mut all: Vec<Observed> = r.observed().into_iter().collect();
        all.extend(CallRecorder::read_log(&self.env.runner_call_log()));
        all.sort();
        all.dedup();
        all
    }
}
