# No accelerated or very large instance families: they cost thousands a month each.
package strato.plan

denied_families := {"p3", "p4d", "p4de", "p5", "p5e", "g5", "g6", "trn1", "inf2", "x1", "x1e", "x2idn", "x2iedn", "u-6tb1"}

# Resources created or updated by the plan (a deleted one's old type does not matter).
changed contains rc if {
	some rc in input.plan.resource_changes
	some action in rc.change.actions
	action in {"create", "update"}
}

instance_types contains [rc.address, t] if {
	some rc in changed
	rc.type in {"aws_instance", "aws_launch_template"}
	t := rc.change.after.instance_type
}

instance_types contains [rc.address, t] if {
	some rc in changed
	rc.type == "aws_eks_node_group"
	some t in rc.change.after.instance_types
}

deny contains msg if {
	some [address, t] in instance_types
	family := split(t, ".")[0]
	denied_families[family]
	msg := sprintf("%s uses instance type %s: the %s family is not allowed", [address, t, family])
}
