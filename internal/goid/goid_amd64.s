#include "textflag.h"

// func Get() uintptr
TEXT ·Get(SB),NOSPLIT,$0-8
	MOVQ (TLS), AX
	MOVQ AX, ret+0(FP)
	RET
