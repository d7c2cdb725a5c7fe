#include "textflag.h"

// func Get() uintptr
TEXT ·Get(SB),NOSPLIT,$0-4
	MOVL (TLS), AX
	MOVL AX, ret+0(FP)
	RET
