//! Request policies (policy as code, issue 22): the platform's and the tenant's `strato.request` rules on a
//! create, update or delete, evaluated after the request validated and before anything is written. A deny
//! is a 422 naming each rule; warnings become the operation's notes; the policy set's version is recorded
//! on the operation.

use strato_domain::approval::ApprovalMode;
use strato_domain::ids::ClusterId;
use strato_domain::model::{ClusterSpec, Operation};
use strato_domain::sealed::as_sealed;
use strato_domain::secret::{REDACTED, Redactor};
use strato_domain::template::Template;
use strato_policy::{RequestInput, Stage, input};

use super::Api;
use crate::{caller::Caller, error::ApiError};

/// What the request's policies allowed, to record on its operation.
#[derive(Debug, Default)]
pub(crate) struct Allowed {
    version: Option<String>,
    warnings: Vec<String>,
}

impl Allowed {
    pub(crate) fn record(self, op: &mut Operation) {
        op.policy_version = self.version;
        op.notes
            .extend(self.warnings.into_iter().map(|w| format!("policy warning: {w}")));
    }
}

/// What a request policy sees of approvals (`input.approval`, `input.approval_setting`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ApprovalInput {
    /// The mode that applies to the operation asked for; `None` for a delete.
    pub applies: Option<ApprovalMode>,
    /// The cluster's own setting as the request leaves it.
    pub setting: Option<ApprovalMode>,
}

impl<S, T, Q, C, K> Api<'_, S, T, Q, C, K> {
    /// Evaluates the request policies on `spec` (the spec as it would be applied, of template `t`) and
    /// `approval`. Without a policy set (decision tests on fakes) everything is allowed.
    ///
    /// Policies run before the spec is sealed, and their messages become the 422's errors and the
    /// operation's notes (read by every viewer): they see each sensitive variable (the template says which)
    /// only as `(sensitive value)`, and any such value a message still carries is redacted from it.
    pub(crate) fn check_policies(
        &self,
        caller: &Caller,
        action: &str,
        cluster: Option<&ClusterId>,
        spec: &ClusterSpec,
        t: &Template,
        approval: ApprovalInput,
    ) -> Result<Allowed, ApiError> {
        let Some(set) = self.policies else {
            return Ok(Allowed::default());
        };
        let redactor = Redactor::default();
        let mut variables = spec.variables.clone();
        for (k, v) in variables.iter_mut() {
            if t.manifest.variables.get(k).is_some_and(|d| d.sensitive) {
                if as_sealed(v).is_none() {
                    redactor.add_json(v);
                }
                *v = serde_json::Value::from(REDACTED);
            }
        }
        let input = RequestInput {
            action: action.to_owned(),
            tenant: caller.tenant.to_string(),
            principal: caller.subject.clone(),
            cluster: input::ClusterRef {
                id: cluster.map(ToString::to_string),
                name: spec.name.to_string(),
            },
            template: input::TemplateRef {
                name: spec.template.name.clone(),
                version: spec.template.version.clone(),
            },
            provider: serde_json::to_value(spec.provider)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            region: spec.region.clone(),
            variables,
            approval: approval.applies.map(|m| m.as_str().to_owned()),
            approval_setting: approval.setting.map(|m| m.as_str().to_owned()),
            ..RequestInput::default()
        }
        .derive();
        let mut verdict = set.evaluate(Stage::Request, &input.to_value());
        verdict.redact_messages(|m| redactor.redact(m));
        if verdict.denied() {
            return Err(ApiError::PolicyDenied {
                deny: verdict.deny,
                version: verdict.version,
            });
        }
        Ok(Allowed {
            version: Some(verdict.version),
            warnings: verdict.warn.iter().map(ToString::to_string).collect(),
        })
    }
}
