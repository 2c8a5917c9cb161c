# Clusters only in the regions the platform operates in, per cloud (a cloud not listed has none).
package strato.request

allowed_regions := {
	"aws": {
		"us-east-1", "us-east-2", "us-west-2",
		"eu-west-1", "eu-west-2", "eu-central-1", "eu-north-1",
		"ap-southeast-1", "ap-southeast-2", "ap-northeast-1",
	},
	"gcp": {
		"us-central1", "us-east1", "us-east4", "us-west1",
		"europe-west1", "europe-west2", "europe-west3", "europe-west4",
		"asia-northeast1", "asia-southeast1", "australia-southeast1",
	},
	"azure": {
		"eastus", "eastus2", "centralus", "westus2", "westus3",
		"northeurope", "westeurope", "uksouth", "germanywestcentral", "swedencentral",
		"southeastasia", "japaneast", "australiaeast",
	},
	"digitalocean": {"nyc1", "nyc3", "sfo3", "tor1", "ams3", "fra1", "lon1", "sgp1", "syd1"},
	"linode": {"us-east", "us-central", "us-west", "us-southeast", "eu-west", "eu-central", "ap-south", "ap-northeast"},
}

regions_of(provider) := object.get(allowed_regions, provider, set())

deny contains msg if {
	input.action != "delete"
	not regions_of(input.provider)[input.region]
	msg := sprintf(
		"region '%s' is not allowed for %s; use one of %v",
		[input.region, input.provider, sort(regions_of(input.provider))],
	)
}
