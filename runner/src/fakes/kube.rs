//! A cluster's Kubernetes API in memory: records every apply (endpoint, CA, token, path, body), keeps the
//! objects by path, and answers scripted failures first.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::lock;
use crate::kube::{Applied, HttpKube, KubeApi, KubeCluster, KubeError};

/// One apply the run made.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeCall {
    pub cluster: KubeCluster,
    pub token: String,
    pub path: String,
    pub body: Value,
}

#[derive(Default)]
struct Inner {
    calls: Vec<KubeCall>,
    failures: VecDeque<KubeError>,
    /// Path (without query) → (object, resource version).
    objects: BTreeMap<String, (Value, u64)>,
    version: u64,
    /// Applies go on to a real API over HTTPS (recorded all the same).
    forward: Option<HttpKube>,
}

/// The fake cluster API; clones share their state.
#[derive(Clone, Default)]
pub struct FakeKube(Arc<Mutex<Inner>>);

impl FakeKube {
    /// The next `times` applies fail with `error` (before any succeeds).
    pub fn fail(&self, error: KubeError, times: usize) -> &Self {
        lock(&self.0).failures.extend(std::iter::repeat_n(error, times));
        self
    }

    /// A fake that records each apply and sends it on to a real API with `http` (a run on the fakes
    /// against an API server on the wire protocol).
    pub fn forwarding_to(http: HttpKube) -> Self {
        let kube = Self::default();
        lock(&kube.0).forward = Some(http);
        kube
    }

    pub fn calls(&self) -> Vec<KubeCall> {
        lock(&self.0).calls.clone()
    }

    /// The objects applied, by path (without the query).
    pub fn objects(&self) -> BTreeMap<String, Value> {
        lock(&self.0)
            .objects
            .iter()
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect()
    }
}

impl KubeApi for FakeKube {
    async fn apply(
        &self,
        cluster: &KubeCluster,
        token: &str,
        path: &str,
        object: &Value,
    ) -> Result<Applied, KubeError> {
        let forward = {
            let mut inner = lock(&self.0);
            inner.calls.push(KubeCall {
                cluster: cluster.clone(),
                token: token.to_owned(),
                path: path.to_owned(),
                body: object.clone(),
            });
            if let Some(e) = inner.failures.pop_front() {
                return Err(e);
            }
            inner.forward.clone()
        };
        if let Some(http) = forward {
            return http.apply(cluster, token, path, object).await;
        }
        let mut inner = lock(&self.0);
        let key = path.split('?').next().unwrap_or(path).to_owned();
        let next = inner.version + 1;
        let (created, version) = match inner.objects.get(&key) {
            Some((old, v)) if old == object => (false, *v),
            Some(_) => (false, next),
            None => (true, next),
        };
        inner.version = inner.version.max(version);
        inner.objects.insert(key, (object.clone(), version));
        Ok(Applied {
            created,
            resource_version: Some(version.to_string()),
        })
    }
}
