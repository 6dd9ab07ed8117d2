#include "textflag.h"
#include "reduce_amd64.h"

// Each kernel makes three passes over x: the sum, which gives the mean
// (broadcast in Z3 or Y3); the sum of squared deviations, which gives
// 1/sqrt(var+eps) (broadcast in Z4 or Y4); and the output. X7 holds n as
// a float32.

// X_PASS starts a pass over the values: DX at x (SI), BX counting them
// from n (CX).
#define X_PASS \
	MOVQ SI, DX; \
	MOVQ CX, BX

// RSQRT_X0_X1 sets X1 = 1/sqrt(X0), in float32, and X0 = sqrt(X0).
// Clobbers AX.
#define RSQRT_X0_X1 \
	VSQRTSS X0, X0, X0; \
	MOVL $0x3f800000, AX; \
	VMOVD AX, X1; \
	VDIVSS X0, X1, X1

// func normAVX512(x *float32, n int, scale, bias *float32, eps float32)
//
// Layer normalisation of x[:n] in place: (x-mean)/sqrt(var+eps)·scale+bias,
// mean and variance over the n values in float32. n is a positive multiple
// of 16.
TEXT ·normAVX512(SB), NOSPLIT, $0-36
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ scale+16(FP), DI
	MOVQ bias+24(FP), R8
	CVTSQ2SS CX, X7
	X_PASS
	VPXORD Z2, Z2, Z2

normAVX512sum:
	VADDPS (DX), Z2, Z2
	ADDQ $64, DX
	SUBQ $16, BX
	JNE normAVX512sum
	VMOVAPS Z2, Z0
	REDUCE_Z0(VADDPS)
	VDIVSS X7, X0, X0
	VBROADCASTSS X0, Z3
	X_PASS
	VPXORD Z2, Z2, Z2

normAVX512sq:
	VMOVUPS (DX), Z0
	VSUBPS Z3, Z0, Z0
	VFMADD231PS Z0, Z0, Z2
	ADDQ $64, DX
	SUBQ $16, BX
	JNE normAVX512sq
	VMOVAPS Z2, Z0
	REDUCE_Z0(VADDPS)
	VDIVSS X7, X0, X0
	VADDSS eps+32(FP), X0, X0
	RSQRT_X0_X1
	VBROADCASTSS X1, Z4

normAVX512out:
	VMOVUPS (SI), Z0
	VSUBPS Z3, Z0, Z0
	VMULPS Z4, Z0, Z0
	VMOVUPS (R8), Z1
	VFMADD231PS (DI), Z0, Z1
	VMOVUPS Z1, (SI)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, R8
	SUBQ $16, CX
	JNE normAVX512out
	VZEROUPPER
	RET

// func normAVX2(x *float32, n int, scale, bias *float32, eps float32)
//
// Layer normalisation of x[:n] in place: (x-mean)/sqrt(var+eps)·scale+bias,
// mean and variance over the n values in float32. n is a positive multiple
// of 8.
TEXT ·normAVX2(SB), NOSPLIT, $0-36
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	MOVQ scale+16(FP), DI
	MOVQ bias+24(FP), R8
	CVTSQ2SS CX, X7
	X_PASS
	VXORPS Y2, Y2, Y2

normAVX2sum:
	VADDPS (DX), Y2, Y2
	ADDQ $32, DX
	SUBQ $8, BX
	JNE normAVX2sum
	VMOVAPS Y2, Y0
	REDUCE_Y0(VADDPS)
	VDIVSS X7, X0, X0
	VBROADCASTSS X0, Y3
	X_PASS
	VXORPS Y2, Y2, Y2

normAVX2sq:
	VMOVUPS (DX), Y0
	VSUBPS Y3, Y0, Y0
	VFMADD231PS Y0, Y0, Y2
	ADDQ $32, DX
	SUBQ $8, BX
	JNE normAVX2sq
	VMOVAPS Y2, Y0
	REDUCE_Y0(VADDPS)
	VDIVSS X7, X0, X0
	VADDSS eps+32(FP), X0, X0
	RSQRT_X0_X1
	VBROADCASTSS X1, Y4

normAVX2out:
	VMOVUPS (SI), Y0
	VSUBPS Y3, Y0, Y0
	VMULPS Y4, Y0, Y0
	VMOVUPS (R8), Y1
	VFMADD231PS (DI), Y0, Y1
	VMOVUPS Y1, (SI)
	ADDQ $32, SI
	ADDQ $32, DI
	ADDQ $32, R8
	SUBQ $8, CX
	JNE normAVX2out
	VZEROUPPER
	RET
