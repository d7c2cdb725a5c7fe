//go:build aiodebug

package main

func init() { buildFlags = append(buildFlags, "-tags", "aiodebug") }
