#include "textflag.h"

// func Get() uintptr
TEXT ·Get(SB),NOSPLIT,$0-8
	MOVD g, R0
	MOVD R0, ret+0(FP)
	RET
