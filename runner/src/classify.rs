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

/// The engine's error summary from a step's user output: the `Error: …` lines (with the line after each,
/// which usually holds the status code), else the last non-empty lines.
pub fn error_summary(user_output: &str) -> String {
    let lines: Vec<&str> = user_output.lines().map(str::trim_end).collect();
    let mut picked = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let t = l.trim_start_matches(['│', '╷', '╵', ' ']);
        if t.starts_with("Error:") {
            picked.push(t.to_owned());
            if let Some(next) = lines.get(i + 1).map(|n| n.trim()).filter(|n| !n.is_empty()) {
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
    let mut s = picked.join(" ");
    if s.len() > 1000 {
        let mut cut = 1000;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

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
}
