# No S3 bucket readable or writable by the world.
package strato.plan

public_acls := {"public-read", "public-read-write", "authenticated-read"}

creating_or_updating(rc) if {
	some action in rc.change.actions
	action in {"create", "update"}
}

deny contains msg if {
	some rc in input.plan.resource_changes
	rc.type in {"aws_s3_bucket_acl", "aws_s3_bucket"}
	creating_or_updating(rc)
	rc.change.after.acl in public_acls
	msg := sprintf("%s grants the public ACL '%s'", [rc.address, rc.change.after.acl])
}

deny contains msg if {
	some rc in input.plan.resource_changes
	rc.type == "aws_s3_bucket_public_access_block"
	creating_or_updating(rc)
	some setting in ["block_public_acls", "block_public_policy", "ignore_public_acls", "restrict_public_buckets"]
	rc.change.after[setting] == false
	msg := sprintf("%s turns off %s", [rc.address, setting])
}
