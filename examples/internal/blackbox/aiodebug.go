//go:build aiodebug

package blackbox

func init() { buildFlags = append(buildFlags, "-tags", "aiodebug") }
