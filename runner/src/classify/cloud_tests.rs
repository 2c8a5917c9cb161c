//! The other clouds' provider errors (texts as the google, azurerm, digitalocean and linode providers print
//! them): transient ones are retried, quotas and permissions are not.

use super::*;

fn category(text: &str) -> ErrorCategory {
    classify(text).category
}

#[test]
fn gcp_rate_limits_and_5xx_are_transient_but_quotas_and_permissions_are_not() {
    // A per-minute request limit says "Quota exceeded" too: it is a rate limit, retried.
    assert_eq!(
        category(
            "Error: Error creating Subnetwork: googleapi: Error 429: Quota exceeded for quota metric 'Queries' and \
             limit 'Queries per minute' of service 'compute.googleapis.com' for consumer 'project_number:123'., \
             rateLimitExceeded"
        ),
        Transient
    );
    assert_eq!(
        category(
            "Error: Error creating NodePool: googleapi: Error 500: Internal error. Please try again or contact Google Support. (Code: 'ABC123'), backendError"
        ),
        Transient
    );
    assert_eq!(
        category(
            "Error: error creating NodePool: googleapi: Error 400: Cluster is running incompatible operation operation-1700000000000-abcd., failedPrecondition"
        ),
        Transient
    );
    // A resource quota is not retried.
    assert_eq!(
        category(
            "Error: Error creating NodePool: googleapi: Error 403: Quota 'CPUS' exceeded.  Limit: 24.0 in region us-central1., quotaExceeded"
        ),
        Quota
    );
    assert_eq!(
        category(
            "Error: Error creating service account: googleapi: Error 403: Permission 'iam.serviceAccounts.create' denied on resource (or it may not exist)., forbidden"
        ),
        Credentials
    );
    assert_eq!(
        category(
            "Error: Error creating Network: googleapi: Error 409: The resource 'projects/acme/global/networks/prod' already exists, alreadyExists"
        ),
        AlreadyExists
    );
}

#[test]
fn azure_retryable_throttled_busy_and_replication_errors_are_transient() {
    for text in [
        "Error: creating Virtual Network (Subscription: \"00000000-0000-0000-0000-000000000000\"\nResource Group Name: \"prod-rg\"\nVirtual Network Name: \"prod\"): performing CreateOrUpdate: unexpected status 429 (429 Too Many Requests) with error: SubscriptionRequestsThrottled: Number of 'write' requests for subscription '00000000-0000-0000-0000-000000000000' actor 'x' exceeded. Please try again after '17' seconds after additional 'write' requests.",
        "Error: updating Kubernetes Cluster (Subscription: \"0000\"\nResource Group Name: \"prod-rg\"\nKubernetes Cluster Name: \"prod\"): performing CreateOrUpdate: unexpected status 409 (409 Conflict) with error: AnotherOperationInProgress: Another operation (Updating) is in progress on the managed cluster prod.",
        "Error: creating Subnet: performing CreateOrUpdate: unexpected status 503 (503 Service Unavailable) with error: ServerTimeout: The request timed out.",
        "Error: waiting for creation of Kubernetes Cluster: Code=\"InternalServerError\" Message=\"An internal error occurred. Please retry.\"",
    ] {
        assert_eq!(category(text), Transient, "{text}");
    }
    assert_eq!(
        category(
            "Error: creating Kubernetes Cluster: performing CreateOrUpdate: unexpected status 400 (400 Bad Request) with error: QuotaExceeded: Provisioning of resource(s) for container service prod in resource group prod-rg failed. Message: Operation could not be completed as it results in exceeding approved standardDSv5Family Cores quota."
        ),
        Quota
    );
    assert_eq!(
        category(
            "Error: creating Resource Group \"prod-rg\": resources.GroupsClient#CreateOrUpdate: Failure responding to request: StatusCode=403 -- Original Error: autorest/azure: Service returned an error. Status=403 Code=\"AuthorizationFailed\" Message=\"The client '1111' with object id '1111' does not have authorization to perform action 'Microsoft.Resources/subscriptions/resourcegroups/write'\""
        ),
        Credentials
    );
}

#[test]
fn digitalocean_and_linode_429_and_5xx_are_transient_4xx_are_not() {
    assert_eq!(
        category(
            "Error: Error creating VPC: POST https://api.digitalocean.com/v2/vpcs: 503 (request \"0f1e2d3c\") Service Unavailable"
        ),
        Transient
    );
    assert_eq!(
        category(
            "Error: Error creating Kubernetes cluster: POST https://api.digitalocean.com/v2/kubernetes/clusters: 422 (request \"0f1e2d3c\") validation error: invalid version slug"
        ),
        Unknown
    );
    assert_eq!(
        category(
            "Error: Error creating Kubernetes cluster: POST https://api.digitalocean.com/v2/kubernetes/clusters: 401 (request \"0f1e2d3c\") Unable to authenticate you"
        ),
        Credentials
    );
    assert_eq!(
        category("Error: failed to update LKE cluster 12345: [502] Bad Gateway"),
        Transient
    );
    assert_eq!(
        category("Error: failed to create LKE cluster: [401] Invalid Token"),
        Credentials
    );
    assert_eq!(
        category("Error: failed to create LKE cluster: [400] [k8s_version] Invalid Kubernetes version"),
        Unknown
    );
}
