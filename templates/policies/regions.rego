# Clusters only in the regions the platform operates in.
package strato.request

allowed_regions := {
	"us-east-1", "us-east-2", "us-west-2",
	"eu-west-1", "eu-west-2", "eu-central-1", "eu-north-1",
	"ap-southeast-1", "ap-southeast-2", "ap-northeast-1",
}

deny contains msg if {
	input.action != "delete"
	not allowed_regions[input.region]
	msg := sprintf("region '%s' is not allowed; use one of %v", [input.region, sort(allowed_regions)])
}
