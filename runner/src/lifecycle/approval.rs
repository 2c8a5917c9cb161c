//! Plan approvals in the runner (see [`strato_domain::approval`]). For an operation that needs approval, a
//! stage with changes is planned (budget and policies checked as always), the plan file is sealed with
//! Strato's key into the artifacts bucket, and the run ends with an `awaiting_approval` report naming its
//! checksum and the state it was made against. The run after the approval fetches that plan, refuses it
//! unless its SHA-256 is the approved one, and applies it only if the stage's state is still the one the
//! plan was made against; otherwise it plans again and asks again.

use serde_json::Value;
use sha2::{Digest, Sha256};
use strato_domain::ErrorCategory;
use strato_domain::approval::{SavedPlan, StateStamp};
use strato_domain::sealed::{self, Envelope};

use super::PreparedRun;
use super::failure::Failure;
use super::plan::{plan_summary, planned_changes};
use crate::ports::{Artifacts, Ports};
use crate::workspace::PLAN_FILE;

/// What became of a stage of an operation that needs approval.
pub(super) enum Gate {
    /// Nothing to change.
    Unchanged,
    /// The approved plan was applied.
    Applied,
    /// The plan is saved; the run ends and waits for an approver.
    Awaiting(Box<SavedPlan>),
}

/// The lineage and serial of `terraform state pull`'s output; `None` for an empty state (a first create).
pub(super) fn state_stamp(pulled: &str) -> Result<Option<StateStamp>, String> {
    let text = strato_terraform::render::strip_write_prefix(pulled.trim());
    if text.is_empty() {
        return Ok(None);
    }
    let v: Value = serde_json::from_str(text).map_err(|e| format!("state pull is not JSON: {e}"))?;
    match (v["lineage"].as_str(), v["serial"].as_u64()) {
        (Some(lineage), Some(serial)) => Ok(Some(StateStamp {
            lineage: lineage.to_owned(),
            serial,
        })),
        _ => Err("the pulled state has no lineage or serial".into()),
    }
}

pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

impl<P: Ports> PreparedRun<'_, P> {
    /// The KMS encryption context of a sealed plan's data key.
    fn plan_context(&self) -> sealed::KeyContext {
        sealed::KeyContext::new(&self.ctx.op.tenant_id, sealed::PURPOSE_PLAN)
    }

    /// The associated data binding a sealed plan to its tenant, operation and stage.
    fn plan_aad(&self, stage: &str) -> String {
        let op = &self.ctx.op;
        sealed::aad(&op.tenant_id, op.operation_id.as_str(), &format!("plan:{stage}"))
    }

    /// Plans `stage`; with changes, saves the plan sealed and returns it for approval.
    pub(super) async fn plan_for_approval(&mut self, stage: &str) -> Result<Gate, Failure> {
        let step = self.step(stage, "approval");
        if !self.saved_plan_apply {
            return Err(Failure {
                fix:
                    "Use a released Terraform or OpenTofu (STRATO_TERRAFORM), or set the cluster's approval \
                      to auto."
                        .into(),
                ..Failure::new(
                    &step,
                    ErrorCategory::InvalidConfiguration,
                    "this engine cannot apply a saved plan, so an approved plan could not be applied exactly; \
                     nothing was applied",
                )
            });
        }
        let (plan, changes) = self.plan(stage, false).await?;
        if !changes {
            self.note(
                &self.step(stage, "apply"),
                "no changes; nothing to approve or apply",
            );
            return Ok(Gate::Unchanged);
        }
        let bytes = std::fs::read(self.ws.stage_dir(stage).join(PLAN_FILE))
            .map_err(|e| Failure::internal(&step, format!("reading the saved plan: {e}")))?;
        let sha = sha256_hex(&bytes);
        let state = self.pull_state_stamp(stage).await?;
        let env = sealed::seal(
            self.ctx.keys(),
            &self.plan_context(),
            &self.plan_aad(stage),
            &bytes,
        )
        .await
        .map_err(|e| Failure::internal(&step, format!("sealing the plan: {e}")))?;
        let key = strato_terraform::artifacts::plan_key(&self.ctx.op.operation_id, stage, &sha);
        self.ctx.fenced("save the plan").await?;
        let body = serde_json::to_vec(&env).map_err(|e| Failure::internal(&step, e))?;
        self.ctx
            .ports
            .sinks
            .put(&key, body)
            .await
            .map_err(|e| Failure::internal(&step, e))?;
        let summary = plan_summary(&plan);
        self.note(
            &step,
            &format!(
                "plan saved for approval (sha256 {sha}): {} to add, {} to change, {} to destroy; nothing applied",
                summary.add, summary.change, summary.destroy
            ),
        );
        Ok(Gate::Awaiting(Box::new(SavedPlan {
            stage: stage.to_owned(),
            summary,
            changes: planned_changes(&plan),
            plan_key: key,
            plan_sha256: sha,
            state,
        })))
    }

    /// Applies the approved plan of `stage` if the state is still the one it was made against; else plans
    /// again for a new approval.
    pub(super) async fn apply_approved(
        &mut self,
        stage: &str,
        approved: &SavedPlan,
    ) -> Result<Gate, Failure> {
        let step = self.step(stage, "approval");
        let now = self.pull_state_stamp(stage).await?;
        if now != approved.state {
            let serial =
                |s: &Option<StateStamp>| s.as_ref().map_or("none".to_owned(), |s| s.serial.to_string());
            self.note(
                &step,
                &format!(
                    "the state changed since the approved plan (serial {} → {}); planning again for a new approval",
                    serial(&approved.state),
                    serial(&now)
                ),
            );
            return self.plan_for_approval(stage).await;
        }
        let body = self
            .ctx
            .ports
            .sinks
            .get(&approved.plan_key)
            .await
            .map_err(|e| Failure::internal(&step, format!("reading the approved plan: {e}")))?;
        let env: Envelope = serde_json::from_slice(&body).map_err(|e| {
            Failure::internal(&step, format!("the approved plan is not a sealed envelope: {e}"))
        })?;
        let plain = sealed::open(self.ctx.keys(), &env, &self.plan_context(), &self.plan_aad(stage))
            .await
            .map_err(|e| Failure::internal(&step, format!("opening the approved plan: {e}")))?;
        use secrecy::ExposeSecret;
        let bytes = plain.expose_secret();
        let sha = sha256_hex(bytes);
        if sha != approved.plan_sha256 {
            return Err(Failure::internal(
                &step,
                format!(
                    "the stored plan's checksum {sha} is not the approved {}; refusing to apply it",
                    approved.plan_sha256
                ),
            ));
        }
        std::fs::write(self.ws.stage_dir(stage).join(PLAN_FILE), bytes)
            .map_err(|e| Failure::internal(&step, format!("writing the approved plan: {e}")))?;
        self.note(&step, &format!("applying the approved plan (sha256 {sha})"));
        self.apply(stage).await?;
        Ok(Gate::Applied)
    }

    /// The stage's state as the backend holds it now (`state pull`).
    async fn pull_state_stamp(&self, stage: &str) -> Result<Option<StateStamp>, Failure> {
        let out = self
            .command(stage, "state", &["state", "pull"], true, false)
            .await?;
        if !out.success() {
            return Err(Failure::from_outcome(&self.step(stage, "state"), &out));
        }
        state_stamp(&out.stdout).map_err(|e| Failure::internal(&self.step(stage, "state"), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn planned_changes_list_every_change_by_address_and_leave_no_ops_and_reads_out() {
        let plan = json!({"resource_changes": [
            {"address": "aws_vpc.this", "change": {"actions": ["create"]}},
            {"address": "aws_subnet.a", "change": {"actions": ["no-op"]}},
            {"address": "data.aws_ami.x", "change": {"actions": ["read"]}},
            {"address": "aws_instance.n[0]", "change": {"actions": ["delete", "create"]}},
        ]});
        let got = planned_changes(&plan);
        assert_eq!(
            got.iter()
                .map(|c| (c.address.as_str(), c.actions.join(",")))
                .collect::<Vec<_>>(),
            vec![
                ("aws_vpc.this", "create".to_owned()),
                ("aws_instance.n[0]", "delete,create".to_owned())
            ]
        );
        assert!(planned_changes(&json!({})).is_empty());
    }

    #[test]
    fn the_state_stamp_is_lineage_and_serial_and_none_for_no_state() {
        let pulled = r#"{"version": 4, "serial": 7, "lineage": "3f2a", "resources": []}"#;
        assert_eq!(
            state_stamp(pulled).unwrap(),
            Some(StateStamp {
                lineage: "3f2a".into(),
                serial: 7
            })
        );
        assert_eq!(state_stamp("  \n").unwrap(), None);
        assert!(
            state_stamp("{\"serial\": 1}").is_err(),
            "a state without lineage is not trusted"
        );
        assert!(state_stamp("not json").is_err());
    }

    #[test]
    fn the_checksum_is_the_sha256_of_the_plan_bytes() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
