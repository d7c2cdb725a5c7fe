//go:build race

package blackbox

func init() { buildFlags = append(buildFlags, "-race") }
