# No cluster bigger than the platform supports; a large one is worth a second look.
package strato.request

max_nodes := 50

warn_nodes := 20

deny contains msg if {
	input.action != "delete"
	input.node_count > max_nodes
	msg := sprintf("node_count %d exceeds the platform limit of %d nodes", [input.node_count, max_nodes])
}

warn contains msg if {
	input.action != "delete"
	input.node_count > warn_nodes
	input.node_count <= max_nodes
	msg := sprintf("node_count %d is above %d nodes: check it is needed", [input.node_count, warn_nodes])
}
