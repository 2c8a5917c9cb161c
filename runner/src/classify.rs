//! Maps engine output to an error category and a fix hint. The patterns are data (one row each, with a real
//! provider/engine message as its example) and are tried in order: the first match wins, so specific rows
//! (e.g. `RequestLimitExceeded`, transient) come before general ones (`…LimitExceeded`, quota).

use std::sync::OnceLock;

use regex::Regex;
use strato_domain::ErrorCategory;

pub struct Pattern {
    pub regex: &'static str,
    pub category: ErrorCategory,
    pub fix: &'static str,
    /// A message the pattern was taken from (AWS provider 3.x / Terraform output); tested.
    pub example: &'static str,
}

use ErrorCategory::*;

const STATE_RESTORE_FIX: &str = "The cluster's Terraform state object is corrupted or was changed outside Strato. \
    List its versions with GET /v1/clusters/{id}/state-versions, restore the last good one with \
    POST /v1/clusters/{id}/state-versions/{version}/restore, then retry the operation.";

pub const PATTERNS: &[Pattern] = &[
    // ---- transient: the other clouds (first: their texts also carry words the general rows below match,
    // e.g. GCP's per-minute rate limits say "Quota exceeded", Azure's throttling "Please try again") ----
    Pattern {
        regex: r"rateLimitExceeded|userRateLimitExceeded|Rate Limit Exceeded",
        category: Transient,
        fix: "Google Cloud rate-limited the API calls (per-minute request limits, not a resource quota); Strato \
              retries automatically, retry later if it persists.",
        example: "Error: Error creating Network: googleapi: Error 403: Rate Limit Exceeded, rateLimitExceeded",
    },
    Pattern {
        regex: r"googleapi: Error 5\d\d\b|googleapi: Error 400: .*incompatible operation|, backendError\b",
        category: Transient,
        fix: "Google Cloud had an internal error or was busy with another operation on the cluster; Strato retries \
              automatically.",
        example: "Error: Error waiting for creating GKE cluster: googleapi: Error 503: The service is currently unavailable., backendError",
    },
    Pattern {
        regex: r#"Code="RetryableError"|unexpected status (429|5\d\d)\b|StatusCode=(429|5\d\d)\b|AnotherOperationInProgress|SubscriptionRequestsThrottled"#,
        category: Transient,
        fix: "Azure throttled the calls, had an internal error or was busy with another operation on the resource; \
              Strato retries automatically.",
        example: "Error: creating Kubernetes Cluster (Subscription: \"00000000-0000-0000-0000-000000000000\"\nResource Group Name: \"prod-rg\"\nKubernetes Cluster Name: \"prod\"): managedclusters.ManagedClustersClient#CreateOrUpdate: Failure sending request: StatusCode=0 -- Original Error: Code=\"RetryableError\" Message=\"A retryable error occurred.\"",
    },
    // Azure AD replicates a new managed identity in seconds: a role assignment made right after it fails once.
    Pattern {
        regex: r#"Code="PrincipalNotFound"|PrincipalNotFound: Principal \w+ does not exist"#,
        category: Transient,
        fix: "Azure did not yet see a managed identity created moments before (directory replication); Strato \
              retries automatically.",
        example: "Error: authorization.RoleAssignmentsClient#Create: Failure responding to request: StatusCode=400 -- Original Error: autorest/azure: Service returned an error. Status=400 Code=\"PrincipalNotFound\" Message=\"Principal 2a3b4c5d6e7f40118a1b2c3d4e5f6a7b does not exist in the directory 72f988bf-86f1-41af-91ab-2d7cd011db47.\"",
    },
    Pattern {
        regex: r"api\.digitalocean\.com/\S*: (429|5\d\d) ",
        category: Transient,
        fix: "DigitalOcean rate-limited the API calls or had an internal error; Strato retries automatically.",
        example: "Error: Error creating Kubernetes cluster: POST https://api.digitalocean.com/v2/kubernetes/clusters: 429 (request \"8c9f0b9e-2f55-4bd1-9a2f-d7b2f3a0c1e4\") Too many requests",
    },
    Pattern {
        regex: r"\[(429|50[0234])\] ",
        category: Transient,
        fix: "Linode rate-limited the API calls or had an internal error; Strato retries automatically.",
        example: "Error: failed to create LKE cluster: [429] Too Many Requests",
    },
    // ---- transient ----
    Pattern {
        regex: r"RequestLimitExceeded",
        category: Transient,
        fix: "AWS throttled the API calls (EC2 request limit); Strato retries automatically, retry later if it persists.",
        example: "Error: Error creating VPC: RequestLimitExceeded: Request limit exceeded.\n\tstatus code: 503, request id: 5c8c5b1e",
    },
    Pattern {
        regex: r"Throttling(Exception)?\b|Rate exceeded|TooManyRequestsException|SlowDown",
        category: Transient,
        fix: "AWS throttled the API calls; Strato retries automatically, retry later if it persists.",
        example: "Error: error creating IAM Role (x): Throttling: Rate exceeded\n\tstatus code: 400",
    },
    Pattern {
        regex: r"(?i)InternalError|InternalFailure|ServiceUnavailable|status code: 5\d\d",
        category: Transient,
        fix: "The cloud API had an internal error; Strato retries automatically.",
        example: "Error: error waiting for EKS Cluster (c) to create: InternalFailure: An internal error occurred\n\tstatus code: 500",
    },
    Pattern {
        regex: r"(?i)i/o timeout|connection reset by peer|TLS handshake timeout|RequestTimeout|RequestError: send request failed|unexpected EOF",
        category: Transient,
        fix: "A network error interrupted a cloud API call; Strato retries automatically.",
        example: "Error: RequestError: send request failed\ncaused by: Post \"https://ec2.us-east-1.amazonaws.com/\": dial tcp 52.1.2.3:443: i/o timeout",
    },
    Pattern {
        regex: r"(?i)please (try again|retry)|try again later|PriorRequestNotComplete|OperationAbortedException|ConcurrentModificationException",
        category: Transient,
        fix: "The cloud API asked to retry; Strato retries automatically.",
        example: "Error: error creating EKS Cluster (c): ResourceInUseException: Cluster already has an update in progress, please try again later",
    },
    // Eventual consistency: a resource created moments ago (or its role, just made) is not yet visible to
    // the API reading or using it. The provider retries some of these itself; what reaches the output is
    // worth a fresh plan and apply. (A NotFound that persists fails after the retries, named as such.)
    Pattern {
        regex: r"\w+\.NotFound\b|ResourceNotFoundException|NoSuchEntity|couldn't find resource",
        category: Transient,
        fix: "The cloud API did not yet see a resource that was just created or changed (eventual consistency); \
              Strato retries automatically. If it persists, check that the resource named in the error still exists.",
        example: "Error: error creating route: InvalidRouteTableID.NotFound: The routeTable ID 'rtb-4fc866a0' does not exist\n\tstatus code: 400, request id: fa8896b1-7b4b-444d-a54d-b38f9d4316f6",
    },
    Pattern {
        regex: r"InvalidParameterException: roleArn, \S+, does not exist|cannot be assumed by|role defined for the function cannot be assumed",
        category: Transient,
        fix: "An IAM role created in the same apply was not yet usable by the service (IAM propagates in seconds); \
              Strato retries automatically.",
        example: "Error: error creating EKS Cluster (demo): InvalidParameterException: roleArn, arn:aws:iam::123456789012:role/demo-eks, does not exist",
    },
    // ---- state lock ----
    Pattern {
        regex: r"Error acquiring the state lock|Error locking state",
        category: StateLocked,
        fix: "Another run holds this cluster's Terraform state lock; wait for it to finish, or let an operator force-unlock a lock left by a dead run.",
        example: "Error: Error acquiring the state lock\n\nError message: ConditionalCheckFailedException: The conditional request failed\nLock Info:\n  ID: 1b2c",
    },
    // ---- credentials / permissions ----
    Pattern {
        regex: r"InvalidClientTokenId|UnrecognizedClientException|SignatureDoesNotMatch|ExpiredToken|AuthFailure|NoCredentialProviders|no valid credential sources",
        category: Credentials,
        fix: "The cloud credentials were rejected; check the target account's role ARN, external id and trust policy.",
        example: "Error: error configuring Terraform AWS Provider: error validating provider credentials: error calling sts:GetCallerIdentity: InvalidClientTokenId: The security token included in the request is invalid.",
    },
    Pattern {
        regex: r"googleapi: Error 403: (Required '[^']+' permission|Permission '[^']+' denied)|IAM_PERMISSION_DENIED|AuthorizationFailed|\[401\] Invalid Token|api\.digitalocean\.com/\S*: 401 ",
        category: Credentials,
        fix: "The cloud identity Strato uses lacks a permission or its token was refused; grant the permission named \
              in the error (or rotate the token) for the target.",
        example: "Error: Error creating Network: googleapi: Error 403: Required 'compute.networks.create' permission for 'projects/acme-prod/global/networks/prod-1a2b3c4d', forbidden",
    },
    Pattern {
        regex: r"AccessDenied|UnauthorizedOperation|not authorized to perform",
        category: Credentials,
        fix: "The role Strato assumes lacks a permission; grant the action named in the error to the target account role.",
        example: "Error: Error creating VPC: UnauthorizedOperation: You are not authorized to perform this operation.\n\tstatus code: 403",
    },
    // ---- quota ----
    Pattern {
        regex: r"\w*LimitExceeded|ServiceQuotaExceeded|QuotaExceeded|(?i)quota",
        category: Quota,
        fix: "A cloud account limit was reached; request a quota increase or delete unused resources.",
        example: "Error: Error creating VPC: VpcLimitExceeded: The maximum number of VPCs has been reached.\n\tstatus code: 400",
    },
    // ---- already exists ----
    Pattern {
        regex: r"EntityAlreadyExists|AlreadyExists|InvalidGroup\.Duplicate|BucketAlreadyOwnedByYou|ResourceInUseException|(?i)already exists",
        category: AlreadyExists,
        fix: "A resource with the same name already exists outside this cluster's state; rename the cluster or delete the resource.",
        example: "Error: Error creating IAM Role demo-eks: EntityAlreadyExists: Role with name demo-eks already exists.\n\tstatus code: 409",
    },
    // ---- state unreadable ----
    Pattern {
        regex: r"Failed to load state|Error loading state|Unsupported state file format|state snapshot was created by Terraform",
        category: StateUnreadable,
        fix: STATE_RESTORE_FIX,
        example: "Error: Failed to load state: Unsupported state file format: The state file could not be parsed as JSON.",
    },
    // The S3 backend keeps the state's md5 in the lock table: an object changed outside Terraform (overwritten,
    // truncated) no longer matches it, and the engine refuses to read it.
    Pattern {
        regex: r"state data in S3 does not have the expected content",
        category: StateUnreadable,
        fix: STATE_RESTORE_FIX,
        example: "Error: state data in S3 does not have the expected content.\n\nThis may be caused by unusually long delays in S3 processing a previous state\nupdate.  Please wait for a minute or two and try again. If this problem\npersists, and neither S3 nor DynamoDB are experiencing an outage, you may need\nto manually verify the remote state and update the Digest value stored in the\nDynamoDB table to the following value: 0f343b0931126a20f133d67c2b018a3b",
    },
    // ---- invalid configuration ----
    // The template pins its providers (`.terraform.lock.hcl`) and `init` runs read-only: a package whose
    // checksum the lock does not list, or a provider it does not pin, is the template's to fix.
    Pattern {
        // Terraform wraps its diagnostics: any run of whitespace between the words.
        regex: r"checksums\s+previously\s+recorded\s+in\s+the\s+dependency\s+lock\s+file|Provider\s+dependency\s+changes\s+detected|lock\s+file\s+is\s+read-only",
        category: InvalidConfiguration,
        fix: "The provider package the engine found does not match the template's lock file (.terraform.lock.hcl). \
              The template's author regenerates it for the runner's platforms with \
              `terraform providers lock -platform=linux_amd64 -platform=linux_arm64` and publishes a new template version.",
        example: "Error: Failed to install provider\n\nError while installing hashicorp/aws v3.39.0: the current package for\nregistry.terraform.io/hashicorp/aws 3.39.0 doesn't match any of the checksums\npreviously recorded in the dependency lock file",
    },
    Pattern {
        regex: r"InvalidParameterValue|InvalidParameterCombination|InvalidSubnet\.\w+|InvalidVpcRange|MalformedPolicyDocument|ValidationError|ValidationException|InvalidParameterException",
        category: InvalidConfiguration,
        fix: "The cloud API rejected a value; correct the variables named in the error and submit again.",
        example: "Error: Error creating VPC: InvalidParameterValue: Value (bogus) for parameter cidrBlock is invalid. This is not a valid CIDR block.\n\tstatus code: 400",
    },
    Pattern {
        regex: r"Invalid value for variable|Invalid value for input variable|Missing required argument|Unsupported argument|Reference to undeclared|Invalid reference|Incorrect attribute value type",
        category: InvalidConfiguration,
        fix: "The template's configuration or a variable is invalid; correct the variable named in the error (or report the template).",
        example: "Error: Invalid value for input variable\n\nThe given value is not valid for variable \"node_count\": a number is required.",
    },
];

fn compiled() -> &'static [Regex] {
    static RE: OnceLock<Vec<Regex>> = OnceLock::new();
    RE.get_or_init(|| {
        PATTERNS
            .iter()
            .map(|p| Regex::new(p.regex).expect("classifier patterns are valid regexes"))
            .collect()
    })
}

/// The first matching pattern's index, if any.
pub fn matching_pattern(text: &str) -> Option<usize> {
    compiled().iter().position(|r| r.is_match(text))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    pub category: ErrorCategory,
    pub fix: String,
}

pub fn classify(text: &str) -> Classified {
    match matching_pattern(text) {
        Some(i) => Classified {
            category: PATTERNS[i].category,
            fix: PATTERNS[i].fix.to_owned(),
        },
        None => Classified {
            category: Unknown,
            fix: Unknown.default_fix().to_owned(),
        },
    }
}

/// A variable whose value the engine refused (`Error: Invalid value for variable`: a validation rule of the
/// template, or `… for input variable`: the wrong type), with the engine's reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidVariable {
    pub name: String,
    /// The rule's `error_message` (or the type error), on one line; may be empty.
    pub reason: String,
}

/// Longest reason kept from an invalid variable's diagnostic.
const REASON_MAX: usize = 300;

/// The first `Invalid value for (input) variable` diagnostic in `text` and the variable it names, in any
/// of the forms Terraform ≥ 0.15 writes: the expression context `var.NAME is …` (1.x), `not valid for
/// variable "NAME"` / `not suitable for var.NAME` (a type error), the declaration `variable "NAME" {`
/// (0.15 on an HCL root variable), a module argument `"${var.NAME}"` (0.15 on a module's rule), or the
/// `"NAME":` line of a tfvars file or JSON declaration. `None` when no such diagnostic, or no name in it
/// (a module argument fed by another module's output is no variable the tenant sets).
pub fn invalid_variable(text: &str) -> Option<InvalidVariable> {
    static RE: OnceLock<[Regex; 5]> = OnceLock::new();
    let [context, type_error, declaration, reference, json_key] = RE.get_or_init(|| {
        [
            r"^var\.([A-Za-z_][\w-]*) is\b",
            r#"not (?:valid|suitable) for (?:variable "|var\.)([A-Za-z_][\w-]*)"#,
            r#"^\d+:\s*variable\s+"([A-Za-z_][\w-]*)""#,
            r"^\d+:.*\$\{var\.([A-Za-z_][\w-]*)\}",
            r#"^\d+:\s*"([A-Za-z_][\w-]*)"\s*:"#,
        ]
        .map(|r| Regex::new(r).expect("valid regex"))
    });
    let lines: Vec<&str> = text
        .lines()
        .map(|l| l.trim_start_matches(['│', '╷', '╵', ' ', '\t']).trim_end())
        .collect();
    let start = lines.iter().position(|l| {
        l.starts_with("Error: Invalid value for variable")
            || l.starts_with("Error: Invalid value for input variable")
    })?;
    let block: Vec<&str> = lines[start + 1..]
        .iter()
        .take_while(|l| !l.starts_with("Error:") && !l.starts_with("Warning:"))
        .copied()
        .collect();
    let first =
        |re: &Regex, lines: &[&str]| lines.iter().find_map(|l| re.captures(l).map(|c| c[1].to_owned()));
    // A key of a JSON line names the variable only in a tfvars file or a variable declaration; in a
    // module block it is the module's argument.
    let header = block.iter().find(|l| l.starts_with("on ")).copied().unwrap_or("");
    let keyed = header.contains(".tfvars") || header.ends_with("in variable:");
    let name = first(context, &block)
        .or_else(|| first(type_error, &[block.join(" ").as_str()]))
        .or_else(|| first(declaration, &block))
        .or_else(|| first(reference, &block))
        .or_else(|| keyed.then(|| first(json_key, &block)).flatten())?;
    let reason: Vec<&str> = block
        .iter()
        .copied()
        .filter(|l| {
            !l.is_empty()
                && !l.starts_with("on ")
                && !l.starts_with('├')
                && !l.starts_with("This was checked by")
                && !context.is_match(l)
                && !l
                    .split_once(':')
                    .is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit()))
        })
        .collect();
    Some(InvalidVariable {
        name,
        reason: cut_at_boundary(&reason.join(" "), REASON_MAX),
    })
}

/// Longest error summary kept (the `what` of a failure).
const SUMMARY_MAX: usize = 1000;

/// The engine's error summary from a step's user output: the `Error: …` lines (with the line after each,
/// which usually holds the status code), else the last non-empty lines. A provider's dump of the AWS error
/// structure (`{`, `RespMetadata: {`, …) is left out, and a summary too long is cut at a sentence or line
/// boundary, never inside one.
pub fn error_summary(user_output: &str) -> String {
    let lines: Vec<&str> = user_output.lines().map(str::trim_end).collect();
    let mut picked = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start_matches(['│', '╷', '╵', ' ']);
        if t.starts_with("Error:") {
            picked.push(t.to_owned());
            if let Some(next) = lines
                .get(i + 1)
                .map(|n| n.trim_start_matches(['│', '╷', '╵', ' ', '\t']).trim())
                .filter(|n| !n.is_empty() && !is_structure_dump(n))
            {
                picked.push(next.to_owned());
            }
        }
    }
    if picked.is_empty() {
        picked = lines
            .iter()
            .rev()
            .filter(|l| !l.trim().is_empty())
            .take(3)
            .map(|l| l.trim().to_owned())
            .collect();
        picked.reverse();
    }
    let picked: Vec<String> = picked
        .into_iter()
        .map(|p| strip_structure_tail(&p).to_owned())
        .filter(|p| !p.is_empty())
        .collect();
    cut_at_boundary(&picked.join(" "), SUMMARY_MAX)
}

/// A line of the AWS SDK's error structure dump (`{`, `RespMetadata: {`, `StatusCode: 404,`, `}`).
fn is_structure_dump(line: &str) -> bool {
    let t = line.trim();
    t.starts_with("{") || t.starts_with("}") || t.starts_with("RespMetadata") || t.ends_with("{")
}

/// Drops a trailing ` {` (the start of a structure dump) from a line.
fn strip_structure_tail(line: &str) -> &str {
    line.trim_end().trim_end_matches("{").trim_end()
}

/// `s` itself when short enough, else cut at the last sentence end (`. `) or line/field boundary before
/// `max` bytes, with `…`.
fn cut_at_boundary(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    let head = &s[..cut];
    let at = head
        .rfind(". ")
        .map(|i| i + 1)
        .or_else(|| head.rfind(": ").map(|i| i + 1))
        .or_else(|| head.rfind(' '))
        .filter(|&i| i > max / 2)
        .unwrap_or(cut);
    format!("{}…", strip_structure_tail(head[..at].trim_end()))
}

#[cfg(test)]
mod cloud_tests;

#[cfg(test)]
mod tests {
    use super::*;

    /// One check per pattern: its example is classified by that very row.
    #[test]
    fn every_pattern_matches_its_real_example_first() {
        for (i, p) in PATTERNS.iter().enumerate() {
            assert_eq!(
                matching_pattern(p.example),
                Some(i),
                "pattern {i} ({}) should be the first to match its example",
                p.regex
            );
            assert_eq!(classify(p.example).category, p.category);
            assert!(p.fix.len() > 20);
        }
    }

    #[test]
    fn request_limit_is_transient_not_quota_and_unknown_falls_through() {
        assert_eq!(classify("RequestLimitExceeded").category, Transient);
        assert_eq!(classify("AddressLimitExceeded: too many EIPs").category, Quota);
        assert_eq!(classify("Error: something odd happened").category, Unknown);
        assert!(classify("Error: something odd").category.default_fix().len() > 10);
    }

    #[test]
    fn summary_picks_error_lines() {
        let out = "aws_vpc.this: Creating...\n\nError: Error creating VPC: InvalidParameterValue: bad\n\tstatus code: 400, request id: x\n\n  on main.tf line 35\n";
        let s = error_summary(out);
        assert!(s.starts_with("Error: Error creating VPC"), "{s}");
        assert!(s.contains("status code: 400"), "{s}");
        assert_eq!(error_summary("a\nb\n\nc\nd\n"), "b c d");
    }

    /// Issue 15 defect 8: a failed update whose provider error is an eventual-consistency NotFound (real
    /// AWS provider messages, with the SDK's structure dump) is transient, and its `what` ends at a sentence,
    /// not inside the dump (it used to end in `{` and be classified `unknown`).
    #[test]
    fn eventual_consistency_not_found_is_transient_and_cut_cleanly() {
        // hashicorp/terraform-provider-aws: EKS answers an update on a cluster it does not yet list.
        let eks = "module.eks.aws_eks_cluster.this: Modifying... [id=demo]\n\n\
                   Error: error updating EKS Cluster (demo) version: ResourceNotFoundException: No cluster found for name: demo.\n\
                   {\n  RespMetadata: {\n    StatusCode: 404,\n    RequestID: \"1b6b1a4e-0f2c-4b7e-9d2a-3f4c5d6e7f80\"\n  },\n\
                   Message_: \"No cluster found for name: demo.\"\n}\n\n  on .terraform/modules/eks/main.tf line 1\n";
        assert_eq!(classify(eks).category, Transient);
        let what = error_summary(eks);
        assert!(what.ends_with("No cluster found for name: demo."), "{what}");
        assert!(!what.contains('{'), "{what}");
        // hashicorp/terraform#6813, #7104 and terraform-provider-aws#1791: EC2 ids not yet visible.
        for text in [
            "Error: Error creating subnet: InvalidSubnetID.NotFound: The subnet ID 'subnet-632d513b' does not exist\n\tstatus code: 400, request id: bebb274d-0a37-422d-b3ab-7270f8b49519",
            "Error: error waiting for Route Table (rtb-2915b050) to become available: couldn't find resource (21 retries)",
            "Error: InvalidInstanceID.NotFound: The instance ID 'i-0d5b3ec3a5c4f1f22' does not exist\n\tstatus code: 400",
        ] {
            assert_eq!(classify(text).category, Transient, "{text}");
        }
        // A same-line dump start is cut too.
        assert_eq!(
            error_summary("Error: updating: ResourceNotFoundException: gone. {\n"),
            "Error: updating: ResourceNotFoundException: gone."
        );
        // An over-long summary ends at a sentence.
        let long = format!("Error: {}. {}", "a".repeat(700), "b ".repeat(400));
        let cut = error_summary(&long);
        assert!(cut.len() <= SUMMARY_MAX + '…'.len_utf8(), "{}", cut.len());
        assert!(cut.ends_with(".…"), "{cut}");
        // Not every "does not exist" is transient: a bad CIDR stays invalid configuration.
        assert_eq!(
            classify("Error: InvalidParameterValue: Value (bogus) for parameter cidrBlock is invalid.")
                .category,
            InvalidConfiguration
        );
    }

    /// Real `plan -no-color` output (2026-11-29) of a module's validation rule refusing a tenant's value, the
    /// stage's `main.tf.json` wiring `var.node_count` into the module: Terraform 1.11.4, then 0.15.0-rc2.
    const TF111_MODULE_RULE: &str = "Planning failed. Terraform encountered an error while generating this plan.\n\n\
        Error: Invalid value for variable\n\n  on main.tf.json line 13, in module.network:\n  \
        13:       \"node_count\": \"${var.node_count}\",\n    ├────────────────\n    │ var.node_count is 100\n\n\
        The node_count must be between 1 and 50.\n\n\
        This was checked by the validation rule at mod/variables.tf:3,3-13.\n";
    const TF015_MODULE_RULE: &str = "\nError: Invalid value for variable\n\n  on main.tf.json line 13, in module.network:\n  \
        13:       \"node_count\": \"${var.node_count}\",\n\n\
        The node_count must be between 1 and 50.\n\n\
        This was checked by the validation rule at mod/variables.tf:3,3-13.\n";
    /// The same rule on a root variable declared in HCL, the value from `terraform.tfvars.json`.
    const TF111_ROOT_RULE: &str = "Error: Invalid value for variable\n\n  on terraform.tfvars.json line 1:\n   \
        1: {\"node_count\": 100}\n    ├────────────────\n    │ var.node_count is 100\n\n\
        The node_count must be between 1 and 50.\n\n\
        This was checked by the validation rule at variables.tf:3,3-13.\n";
    const TF015_ROOT_RULE: &str = "Error: Invalid value for variable\n\n  on variables.tf line 1:\n   \
        1: variable \"node_count\" {\n\n\
        The node_count must be between 1 and 50.\n\n\
        This was checked by the validation rule at variables.tf:3,3-13.\n";
    /// A value of the wrong type.
    const TF111_TYPE: &str = "Error: Invalid value for input variable\n\n  on terraform.tfvars.json line 1:\n   \
        1: {\"node_count\": \"abc\", \"cidr\": \"10.0.0.0/16\"}\n\n\
        The given value is not suitable for var.node_count declared at\nmain.tf.json:2,30-31: a number is required.\n";
    const TF015_TYPE: &str = "Error: Invalid value for input variable\n\n  on terraform.tfvars.json line 1:\n   \
        1: {\"node_count\": \"abc\", \"cidr\": \"10.0.0.0/16\"}\n\n\
        The given value is not valid for variable \"node_count\": a number is required.\n";

    #[test]
    fn an_invalid_variable_is_named_with_its_rule_in_every_engine_s_wording() {
        for (engine, text) in [
            ("1.11 module rule", TF111_MODULE_RULE),
            ("0.15 module rule", TF015_MODULE_RULE),
            ("1.11 root rule", TF111_ROOT_RULE),
            ("0.15 root rule", TF015_ROOT_RULE),
        ] {
            assert_eq!(classify(text).category, InvalidConfiguration, "{engine}");
            assert_eq!(
                invalid_variable(text),
                Some(InvalidVariable {
                    name: "node_count".into(),
                    reason: "The node_count must be between 1 and 50.".into(),
                }),
                "{engine}"
            );
        }
        for (engine, text) in [("1.11 type", TF111_TYPE), ("0.15 type", TF015_TYPE)] {
            let v = invalid_variable(text).unwrap_or_else(|| panic!("{engine}: no variable"));
            assert_eq!(v.name, "node_count", "{engine}");
            assert!(
                v.reason.ends_with("a number is required."),
                "{engine}: {}",
                v.reason
            );
        }
        // Another diagnostic, or a module argument fed by another module's output: no variable to name.
        assert_eq!(
            invalid_variable(
                "Error: Unsupported argument\n\nAn argument named \"x\" is not expected here.\n"
            ),
            None
        );
        assert_eq!(
            invalid_variable(
                "Error: Invalid value for variable\n\n  on main.tf.json line 20, in module.cluster:\n  \
                 20:       \"vpc_id\": \"${module.network.vpc_id}\",\n\nThe vpc_id must start with vpc-.\n"
            ),
            None
        );
    }
}
