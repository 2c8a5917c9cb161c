//! An Azure cloud for Terraform's real `azurerm` backend, on this machine:
//!
//! - **Azurite** (npm `azurite`, installed on first use into `<tools>/azurite`, pinned and stamped) plays the
//!   tenant's storage account: Blob Storage over https with Entra ID bearer tokens (`--oauth basic`: it reads
//!   the token's issuer, audience and lifetime, not its signature), blob leases (the backend's lock);
//! - a **metadata endpoint** (a few lines of Node beside it, same certificate) plays Azure's ARM metadata
//!   service, which the backend's `metadata_host` must name over https: its answer sends Entra ID and
//!   Resource Manager to [`crate::FakeClouds`], where the engine exchanges the run's identity token and asks
//!   where the storage account's blob endpoint is (`lookup_blob_endpoint`) — Azurite's path-style URL, since
//!   no emulator answers `https://<account>.blob.core.windows.net`.
//!
//! Both listen on loopback with a certificate made here (openssl) for `127.0.0.1`; the engine trusts it
//! through `SSL_CERT_FILE` ([`Azurite::ca_file`]). Needs `node`/`npm` (Node 20) and `openssl`: without them
//! [`azure_bed`] says which is missing and why, for the caller to skip loudly.

use std::fs::{self, File};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};

use crate::install::{remove_dir, run, tools_dir};
use crate::stamp::{stamp_valid, write_stamp};

pub const AZURITE_PACKAGE: &str = "azurite@3.37.0";

/// The installed Azurite.
#[derive(Debug, Clone)]
pub struct AzureBed {
    /// `node_modules/.bin/azurite-blob`.
    pub azurite_blob: PathBuf,
}

/// Azurite, installed (or verified) once per process; `Err` says what is missing.
pub fn azure_bed() -> Result<&'static AzureBed, String> {
    static BED: OnceLock<Result<AzureBed, String>> = OnceLock::new();
    BED.get_or_init(|| {
        for (tool, arg) in [("node", "--version"), ("npm", "--version"), ("openssl", "version")] {
            let ok = Command::new(tool)
                .arg(arg)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return Err(format!(
                    "`{tool}` is not on PATH: the Azure stand-in needs Node.js 20 with npm (Azurite) and openssl \
                     (its certificate)"
                ));
            }
        }
        let root = tools_dir();
        fs::create_dir_all(&root).map_err(|e| format!("creating {}: {e}", root.display()))?;
        let lock_path = root.join(".lock");
        let lock = File::create(&lock_path).map_err(|e| format!("opening {}: {e}", lock_path.display()))?;
        lock.lock()
            .map_err(|e| format!("locking {}: {e}", lock_path.display()))?;
        let bed = ensure(&root).map_err(|e| e.to_string());
        drop(lock);
        bed
    })
    .as_ref()
    .map_err(Clone::clone)
}

fn ensure(root: &Path) -> Result<AzureBed, crate::ToolsError> {
    let dir = root.join("azurite");
    let bed = AzureBed {
        azurite_blob: dir.join("node_modules/.bin/azurite-blob"),
    };
    let manifest = dir.join("node_modules/azurite/package.json");
    let stamp = root.join("azurite.stamp");
    if stamp_valid(&stamp, AZURITE_PACKAGE, &[&manifest]) {
        return Ok(bed);
    }
    let _ = fs::remove_file(&stamp);
    remove_dir(&dir)?;
    fs::create_dir_all(&dir).map_err(crate::install::io("creating", &dir))?;
    run(
        "installing Azurite",
        "needs npm and access to the npm registry",
        Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
                "--prefix",
            ])
            .arg(dir)
            .arg(AZURITE_PACKAGE),
    )?;
    write_stamp(&stamp, AZURITE_PACKAGE, &[&manifest])?;
    Ok(bed)
}

/// Azure's ARM metadata document (the 2022-09-01 shape the backend's SDK reads), its Entra ID and Resource
/// Manager at the URL given.
const METADATA_SERVER: &str = r#"
const https = require('https'), fs = require('fs');
const [cert, key, port, arm] = process.argv.slice(2);
const doc = JSON.stringify({
  name: 'StratoEmulatedCloud', portal: arm, resourceManager: arm,
  authentication: { loginEndpoint: arm, audiences: [arm], tenant: 'common', identityProvider: 'AAD' },
  microsoftGraphResourceId: 'https://graph.microsoft.com/', graph: 'https://graph.microsoft.com/',
  suffixes: { storage: 'core.windows.net', keyVaultDns: 'vault.azure.net' },
});
https.createServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key) }, (q, r) => {
  if (q.url.startsWith('/metadata/endpoints')) { r.writeHead(200, { 'content-type': 'application/json' }); r.end(doc); }
  else { r.writeHead(404); r.end(); }
}).listen(Number(port), '127.0.0.1');
"#;

/// One https request to Azurite, trusting the bed's certificate; prints `{status, headers, body}`.
const CLIENT: &str = r#"
const https = require('https'), fs = require('fs');
const [ca, method, url, token] = process.argv.slice(2);
const req = https.request(url, { method, ca: fs.readFileSync(ca), headers: {
  authorization: 'Bearer ' + token, 'x-ms-version': '2023-11-03', 'content-length': 0 } }, (res) => {
  let body = '';
  res.on('data', (c) => body += c);
  res.on('end', () => console.log(JSON.stringify({ status: res.statusCode, headers: res.headers, body })));
});
req.on('error', (e) => { console.error(e.message); process.exit(1); });
req.end();
"#;

/// An answer of Azurite's.
#[derive(Debug)]
pub struct BlobAnswer {
    pub status: u16,
    /// Lower-case header names.
    pub headers: Value,
    pub body: String,
}

impl BlobAnswer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers[name].as_str()
    }
}

/// A private Azurite (in memory) and metadata endpoint on free loopback ports, stopped on drop.
#[derive(Debug)]
pub struct Azurite {
    children: Vec<Child>,
    dir: PathBuf,
    /// The account it serves.
    pub account: String,
    /// `https://127.0.0.1:<port>`: the blob service; the account's endpoint is `<blob>/<account>/`.
    pub blob: String,
    /// `127.0.0.1:<port>`, as the backend's `metadata_host` takes it.
    pub metadata_host: String,
    /// The certificate both present, for `SSL_CERT_FILE`.
    pub ca_file: PathBuf,
}

fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("finding a free port: {e}"))
}

impl Azurite {
    /// Starts Azurite with storage account `account`, and the metadata endpoint sending Entra ID and
    /// Resource Manager to `arm_base` (FakeClouds' base URL).
    pub fn start(bed: &AzureBed, account: &str, arm_base: &str) -> Result<Self, String> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = tools_dir()
            .join("azurite")
            .join(format!("run-{}-{nanos}", std::process::id()));
        fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        run(
            "making the Azure stand-in's certificate",
            "needs openssl 1.1.1 or later (-addext)",
            Command::new("openssl")
                .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"])
                .args(["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"])
                .arg("-keyout")
                .arg(&key)
                .arg("-out")
                .arg(&cert),
        )
        .map_err(|e| e.to_string())?;
        let metadata_js = dir.join("metadata.js");
        fs::write(&metadata_js, METADATA_SERVER)
            .map_err(|e| format!("writing {}: {e}", metadata_js.display()))?;
        let (blob_port, metadata_port) = (free_port()?, free_port()?);
        // The account's key is never used (the backend authorizes with Entra ID tokens), but Azurite wants one.
        let account_key = STANDARD.encode(format!("{account}-unused-key"));
        let mut server = Azurite {
            children: Vec::new(),
            dir: dir.clone(),
            account: account.to_owned(),
            blob: format!("https://127.0.0.1:{blob_port}"),
            metadata_host: format!("127.0.0.1:{metadata_port}"),
            ca_file: cert.clone(),
        };
        let spawn = |cmd: &mut Command, what: &str| {
            cmd.stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("starting {what}: {e}"))
        };
        server.children.push(spawn(
            Command::new(&bed.azurite_blob)
                .args(["--blobHost", "127.0.0.1", "--blobPort", &blob_port.to_string()])
                .arg("--cert")
                .arg(&cert)
                .arg("--key")
                .arg(&key)
                .args([
                    "--oauth",
                    "basic",
                    "--inMemoryPersistence",
                    "--skipApiVersionCheck",
                    "--silent",
                ])
                // In memory, nothing outlives the test (Azurite refuses `--location` with it); its working
                // folder is the run's, in case it writes anything else.
                .current_dir(dir)
                .env("AZURITE_ACCOUNTS", format!("{account}:{account_key}")),
            "Azurite",
        )?);
        server.children.push(spawn(
            Command::new("node")
                .arg(metadata_js)
                .arg(cert)
                .arg(key)
                .arg(metadata_port.to_string())
                .arg(arm_base.trim_end_matches('/')),
            "the metadata endpoint",
        )?);
        for port in [blob_port, metadata_port] {
            crate::clouds::wait_listening(port, Duration::from_secs(60), "the Azure stand-in")?;
        }
        Ok(server)
    }

    /// A bearer token Azurite accepts for the account: Entra ID's v1 storage token shape (issuer
    /// `https://sts.windows.net/<tenant>/`, audience `https://storage.azure.com`), unsigned as Azurite does not
    /// check signatures. For the test's own look at the container, not the engine's (which gets its token
    /// from FakeClouds).
    pub fn bearer(&self) -> String {
        storage_token("00000000-0000-0000-0000-000000000000", "test")
    }

    /// `method` on `path` (`/<container>/<blob>?…`) of the account, as the test's own client.
    pub fn call(&self, method: &str, path: &str) -> Result<BlobAnswer, String> {
        let client = self.dir.join("client.js");
        if !client.exists() {
            fs::write(&client, CLIENT).map_err(|e| format!("writing {}: {e}", client.display()))?;
        }
        let out = Command::new("node")
            .arg(client)
            .arg(&self.ca_file)
            .arg(method)
            .arg(format!("{}/{}{path}", self.blob, self.account))
            .arg(self.bearer())
            .output()
            .map_err(|e| format!("running node: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{method} {path}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("{method} {path}: {e}"))?;
        Ok(BlobAnswer {
            status: v["status"].as_u64().unwrap_or(0) as u16,
            headers: v["headers"].clone(),
            body: v["body"].as_str().unwrap_or_default().to_owned(),
        })
    }

    /// Creates a container (the tenant's, made before Strato is asked to use it).
    pub fn create_container(&self, name: &str) -> Result<(), String> {
        let a = self.call("PUT", &format!("/{name}?restype=container"))?;
        if a.status != 201 {
            return Err(format!("creating container {name}: {} {}", a.status, a.body));
        }
        Ok(())
    }
}

impl Drop for Azurite {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// An Entra ID access token for Azure Storage, as Azurite reads it (claims only; `alg: none`, a placeholder
/// signature).
pub(crate) fn storage_token(tenant: &str, client: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let part = |v: Value| URL_SAFE_NO_PAD.encode(v.to_string());
    format!(
        "{}.{}.unsigned",
        part(json!({"alg": "none", "typ": "JWT"})),
        part(json!({
            "aud": "https://storage.azure.com",
            "iss": format!("https://sts.windows.net/{tenant}/"),
            "tid": tenant,
            "appid": client,
            "iat": now,
            "nbf": now.saturating_sub(60),
            "exp": now + 3600,
        }))
    )
}
