# A cluster's estimated monthly cost has a ceiling; approaching it is worth a warning.
package strato.plan

max_monthly := 5000

warn_monthly := 2000

deny contains msg if {
	input.estimate.total_monthly > max_monthly
	msg := sprintf("the estimated monthly cost %.2f %s exceeds the limit of %d", [input.estimate.total_monthly, input.estimate.currency, max_monthly])
}

warn contains msg if {
	input.estimate.total_monthly > warn_monthly
	input.estimate.total_monthly <= max_monthly
	msg := sprintf("the estimated monthly cost %.2f %s is above %d", [input.estimate.total_monthly, input.estimate.currency, warn_monthly])
}
