# Every cluster should say who owns it. A warning on the platform; a tenant policy can make it a deny.
package strato.request

required_tags := {"owner"}

warn contains msg if {
	input.action == "create"
	some tag in required_tags
	not input.tags[tag]
	msg := sprintf("tag '%s' is missing: set variables.tags.%s", [tag, tag])
}
