use super::*;
use serde_json::json;

fn ids() -> (TenantId, ClusterId) {
    ("acme".parse().unwrap(), ClusterId::generate())
}

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn sealed_variables_hold_no_plaintext_and_open_back() {
    block_on(async {
        let keys = FakeKeys::default();
        let (t, c) = ids();
        let mut vars = BTreeMap::from([
            ("db_password".to_owned(), json!("hunter2-very-secret")),
            ("node_count".to_owned(), json!(3)),
        ]);
        seal_variables(&keys, &t, &c, |k| k == "db_password", &mut vars)
            .await
            .unwrap();
        let stored = serde_json::to_string(&vars).unwrap();
        assert!(!stored.contains("hunter2"), "{stored}");
        assert!(as_sealed(&vars["db_password"]).is_some());
        assert_eq!(vars["node_count"], json!(3));
        let spec = ClusterSpec {
            name: "prod".parse().unwrap(),
            template: crate::model::TemplateRef {
                name: "t".into(),
                version: "1".into(),
            },
            provider: crate::model::CloudProvider::Aws,
            region: "us-east-1".into(),
            variables: vars.clone(),
            target: None,
        };
        let opened = open_spec(&keys, &t, &c, &spec).await.unwrap();
        assert_eq!(opened.variables["db_password"], json!("hunter2-very-secret"));
        // Sealing again keeps the existing ciphertext.
        let mut again = vars.clone();
        seal_variables(&keys, &t, &c, |k| k == "db_password", &mut again)
            .await
            .unwrap();
        assert_eq!(again, vars);
    });
}

#[test]
fn a_ciphertext_moved_to_another_tenant_or_cluster_or_field_does_not_open() {
    block_on(async {
        let keys = FakeKeys::default();
        let (t, c) = ids();
        let ctx = KeyContext::new(&t, PURPOSE_VARIABLES);
        let env = seal(&keys, &ctx, &variable_aad(&t, &c, "db_password"), b"\"s3cret\"")
            .await
            .unwrap();
        assert!(
            open(&keys, &env, &ctx, &variable_aad(&t, &c, "db_password"))
                .await
                .is_ok()
        );
        let other: TenantId = "globex".parse().unwrap();
        assert!(
            open(&keys, &env, &ctx, &variable_aad(&other, &c, "db_password"))
                .await
                .is_err()
        );
        assert!(
            open(
                &keys,
                &env,
                &ctx,
                &variable_aad(&t, &ClusterId::generate(), "db_password")
            )
            .await
            .is_err()
        );
        assert!(
            open(&keys, &env, &ctx, &variable_aad(&t, &c, "other"))
                .await
                .is_err()
        );
        // Another key (another deployment's KMS key) cannot unwrap the data key.
        assert!(
            open(
                &FakeKeys::default(),
                &env,
                &ctx,
                &variable_aad(&t, &c, "db_password")
            )
            .await
            .is_err()
        );
        // An altered ciphertext does not open.
        let mut bad = env.clone();
        bad.ct = B64.encode(b"0123456789abcdef0123456789");
        assert!(
            open(&keys, &bad, &ctx, &variable_aad(&t, &c, "db_password"))
                .await
                .is_err()
        );
    });
}

#[test]
fn a_data_key_unwraps_only_under_the_tenant_and_purpose_it_was_made_for() {
    block_on(async {
        let keys = FakeKeys::default();
        let (t, c) = ids();
        let aad = variable_aad(&t, &c, "db_password");
        let ctx = KeyContext::new(&t, PURPOSE_VARIABLES);
        assert_eq!(
            ctx.pairs(),
            BTreeMap::from([
                ("tenant".to_owned(), "acme".to_owned()),
                ("purpose".to_owned(), "variables".to_owned()),
            ])
        );
        let env = seal(&keys, &ctx, &aad, b"\"s3cret\"").await.unwrap();
        assert_eq!(env.v, ENVELOPE_VERSION);
        let wrapped = B64.decode(&env.key).unwrap();
        // Whoever may Decrypt with another tenant's context (or for another purpose) cannot unwrap it,
        // whatever associated data they would then use.
        let other: TenantId = "globex".parse().unwrap();
        for wrong in [
            KeyContext::new(&other, PURPOSE_VARIABLES),
            KeyContext::new(&t, PURPOSE_EXTERNAL_ID),
            KeyContext::new(&t, PURPOSE_PLAN),
        ] {
            assert!(keys.unwrap_key(&wrapped, &wrong).await.is_err(), "{wrong:?}");
            assert!(open(&keys, &env, &wrong, &aad).await.is_err(), "{wrong:?}");
        }
        assert!(keys.unwrap_key(&wrapped, &ctx).await.is_ok());
        // An envelope of the format without a context is refused with a reason, not opened.
        let old = Envelope { v: 1, ..env };
        let err = open(&keys, &old, &ctx, &aad).await.unwrap_err().to_string();
        assert!(err.contains("set the value again"), "{err}");
    });
}

#[test]
fn external_ids_are_long_random_and_seal_per_tenant() {
    block_on(async {
        let keys = FakeKeys::default();
        let a = generate_external_id();
        assert!(a.expose().len() >= 32);
        assert_ne!(a, generate_external_id());
        let t: TenantId = "acme".parse().unwrap();
        let env = seal_external_id(&keys, &t, &a).await.unwrap();
        assert!(!serde_json::to_string(&env).unwrap().contains(a.expose()));
        assert_eq!(open_external_id(&keys, &t, &env).await.unwrap(), a);
        let other: TenantId = "globex".parse().unwrap();
        assert!(open_external_id(&keys, &other, &env).await.is_err());
    });
}

#[test]
fn only_the_sealed_shape_counts_as_sealed() {
    assert!(as_sealed(&json!("plain")).is_none());
    assert!(as_sealed(&json!({"$strato_sealed": "x"})).is_none());
    assert!(looks_sealed(&json!({"$strato_sealed": "x"})));
    assert!(!looks_sealed(&json!({"a": 1})));
}
