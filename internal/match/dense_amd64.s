#include "textflag.h"

// func dotsInt8AVX2(q *float32, rows *int8, stride, n int, out *float32)
//
// For each of n rows of stride int8 values (stride a multiple of 32), out
// gets the dot product with q: the int8 values are widened to float32 and
// multiplied-added into four 8-lane accumulators.
TEXT ·dotsInt8AVX2(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ rows+8(FP), DI
	MOVQ stride+16(FP), CX
	MOVQ n+24(FP), DX
	MOVQ out+32(FP), R8
	TESTQ DX, DX
	JZ   done

row:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX
	MOVQ   SI, R9

inner:
	VPMOVSXBD   (DI)(AX*1), Y4
	VPMOVSXBD   8(DI)(AX*1), Y5
	VPMOVSXBD   16(DI)(AX*1), Y6
	VPMOVSXBD   24(DI)(AX*1), Y7
	VCVTDQ2PS   Y4, Y4
	VCVTDQ2PS   Y5, Y5
	VCVTDQ2PS   Y6, Y6
	VCVTDQ2PS   Y7, Y7
	VFMADD231PS (R9), Y4, Y0
	VFMADD231PS 32(R9), Y5, Y1
	VFMADD231PS 64(R9), Y6, Y2
	VFMADD231PS 96(R9), Y7, Y3
	ADDQ        $32, AX
	ADDQ        $128, R9
	CMPQ        AX, CX
	JLT         inner

	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0
	VMOVSS       X0, (R8)
	ADDQ         $4, R8
	ADDQ         CX, DI
	DECQ         DX
	JNZ          row
	VZEROUPPER

done:
	RET
