//! Adoption after a false failure (see [`strato_domain::template::adopt`]): an apply of this run failed,
//! the retried apply then fails with "already exists" for a resource the template declares adoptable —
//! the earlier apply created it after all. The resource is imported into the stage's state by its declared
//! id (made of the stage's own values) and the stage is planned again; anything else that already exists
//! still fails, as before.

use std::collections::BTreeSet;

use strato_domain::template::adopt::AdoptRule;

use super::PreparedRun;
use super::failure::Failure;
use crate::ports::Ports;
use crate::workspace::TFVARS_FILE;

/// The template's adoptable resources and what this run adopted.
pub(super) struct Adoption {
    rules: Vec<AdoptRule>,
    /// `stage address` pairs imported in this run: a resource is adopted at most once.
    done: BTreeSet<(String, String)>,
}

impl Adoption {
    pub(super) fn new(rules: Vec<AdoptRule>) -> Self {
        Self {
            rules,
            done: BTreeSet::new(),
        }
    }
}

impl<P: Ports> PreparedRun<'_, P> {
    /// Imports the resource `failure` names when the template declares it adoptable and this run has not
    /// adopted it yet. `Ok(true)`: imported, plan again; `Ok(false)`: not adoptable, the failure stands.
    pub(super) async fn adopt(&mut self, stage: &str, failure: &Failure) -> Result<bool, Failure> {
        let Some(address) = failure.address.as_deref() else {
            return Ok(false);
        };
        let Some(rule) = self.adopt.rules.iter().find(|r| r.address == address).cloned() else {
            return Ok(false);
        };
        if !self.adopt.done.insert((stage.to_owned(), address.to_owned())) {
            return Ok(false);
        }
        let step = self.step(stage, "import");
        // The stage's own inputs (template, managed and earlier stages' values) as the engine got them.
        let vars: serde_json::Map<String, serde_json::Value> =
            std::fs::read_to_string(self.ws.stage_dir(stage).join(TFVARS_FILE))
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default();
        let Some(id) = rule.render_id(&vars) else {
            self.note(
                &step,
                &format!(
                    "{address} already exists but its import id cannot be made from this stage's values"
                ),
            );
            return Ok(false);
        };
        self.note(
            &step,
            &format!(
                "{address} already exists: an earlier apply of this run created it although it reported a \
                 failure; importing it as {id} and planning again"
            ),
        );
        let out = self
            .command(
                stage,
                "import",
                &["import", "-input=false", "-no-color", address, &id],
                false,
                false,
            )
            .await?;
        if out.stopped.is_none() && out.code == Some(0) {
            return Ok(true);
        }
        let mut f = Failure::from_outcome(&step, &out);
        f.what = format!("adopting {address} (id {id}) failed: {}", f.what);
        Err(f)
    }
}
