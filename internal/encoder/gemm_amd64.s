#include "textflag.h"

// The micro-kernels below add a tile of A·B to C, a row of C at a time in
// registers: A's six rows are read from SI (rows 0-2) and R11 (rows 3-5),
// R10 bytes apart; B's step from DI; C from DX, R9 bytes a row.

// A_ROWS turns R10 from lda values into bytes and points R11 at A's
// fourth row, SI+3·R10.
#define A_ROWS \
	SHLQ $2, R10; \
	LEAQ (SI)(R10*2), R11; \
	ADDQ R10, R11

// ZERO_ROW512(c0, c1, c2, c3) zeroes the four registers of a row of C.
#define ZERO_ROW512(c0, c1, c2, c3) \
	VPXORD c0, c0, c0; \
	VPXORD c1, c1, c1; \
	VPXORD c2, c2, c2; \
	VPXORD c3, c3, c3

// FMA_ROW512(a, t, c0, c1, c2, c3) broadcasts A's value at a into t and
// adds it times B's step, Z24-Z27, to a row of C, c0-c3.
#define FMA_ROW512(a, t, c0, c1, c2, c3) \
	VBROADCASTSS a, t; \
	VFMADD231PS Z24, t, c0; \
	VFMADD231PS Z25, t, c1; \
	VFMADD231PS Z26, t, c2; \
	VFMADD231PS Z27, t, c3

// ADD_ROW512(c0, c1, c2, c3) adds a row of the tile, c0-c3, to the 64
// values of C at DX.
#define ADD_ROW512(c0, c1, c2, c3) \
	VADDPS 0(DX), c0, c0; \
	VMOVUPS c0, 0(DX); \
	VADDPS 64(DX), c1, c1; \
	VMOVUPS c1, 64(DX); \
	VADDPS 128(DX), c2, c2; \
	VMOVUPS c2, 128(DX); \
	VADDPS 192(DX), c3, c3; \
	VMOVUPS c3, 192(DX)

// ZERO_ROW256(c0, c1) zeroes the two registers of a row of C.
#define ZERO_ROW256(c0, c1) \
	VXORPS c0, c0, c0; \
	VXORPS c1, c1, c1

// FMA_ROW256(a, t, c0, c1) broadcasts A's value at a into t and adds it
// times B's step, Y12-Y13, to a row of C, c0-c1.
#define FMA_ROW256(a, t, c0, c1) \
	VBROADCASTSS a, t; \
	VFMADD231PS Y12, t, c0; \
	VFMADD231PS Y13, t, c1

// ADD_ROW256(c0, c1) adds a row of the tile, c0-c1, to the 16 values of C
// at DX.
#define ADD_ROW256(c0, c1) \
	VADDPS 0(DX), c0, c0; \
	VMOVUPS c0, 0(DX); \
	VADDPS 32(DX), c1, c1; \
	VMOVUPS c1, 32(DX)

// func tile6x64AVX512(k int, a *float32, lda int, b, c *float32, ldc int)
//
// C[6×64] += A·B over k steps: A is 6 rows lda values apart (SI: rows 0-2,
// R11: rows 3-5), b holds 64 values per step, 64 values (256 bytes) apart.
// Z0-Z23 hold C, four registers a row. B is prefetched 8 steps ahead: a
// short A (a query's few tokens) leaves the kernel waiting on memory for
// B, and the hardware prefetcher stops at every 4 KiB page.
TEXT ·tile6x64AVX512(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R10
	A_ROWS
	MOVQ b+24(FP), DI
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R9
	SHLQ $2, R9
	ZERO_ROW512(Z0, Z1, Z2, Z3)
	ZERO_ROW512(Z4, Z5, Z6, Z7)
	ZERO_ROW512(Z8, Z9, Z10, Z11)
	ZERO_ROW512(Z12, Z13, Z14, Z15)
	ZERO_ROW512(Z16, Z17, Z18, Z19)
	ZERO_ROW512(Z20, Z21, Z22, Z23)
	TESTQ CX, CX
	JEQ tile512store

tile512loop:
	PREFETCHT0 2048(DI)
	PREFETCHT0 2112(DI)
	PREFETCHT0 2176(DI)
	PREFETCHT0 2240(DI)
	VMOVUPS (DI), Z24
	VMOVUPS 64(DI), Z25
	VMOVUPS 128(DI), Z26
	VMOVUPS 192(DI), Z27
	FMA_ROW512((SI), Z28, Z0, Z1, Z2, Z3)
	FMA_ROW512((SI)(R10*1), Z29, Z4, Z5, Z6, Z7)
	FMA_ROW512((SI)(R10*2), Z30, Z8, Z9, Z10, Z11)
	FMA_ROW512((R11), Z31, Z12, Z13, Z14, Z15)
	FMA_ROW512((R11)(R10*1), Z28, Z16, Z17, Z18, Z19)
	FMA_ROW512((R11)(R10*2), Z29, Z20, Z21, Z22, Z23)
	ADDQ $4, SI
	ADDQ $4, R11
	ADDQ $256, DI
	DECQ CX
	JNE tile512loop

tile512store:
	ADD_ROW512(Z0, Z1, Z2, Z3)
	ADDQ R9, DX
	ADD_ROW512(Z4, Z5, Z6, Z7)
	ADDQ R9, DX
	ADD_ROW512(Z8, Z9, Z10, Z11)
	ADDQ R9, DX
	ADD_ROW512(Z12, Z13, Z14, Z15)
	ADDQ R9, DX
	ADD_ROW512(Z16, Z17, Z18, Z19)
	ADDQ R9, DX
	ADD_ROW512(Z20, Z21, Z22, Z23)
	VZEROUPPER
	RET

// func tile6x16AVX2(k int, a *float32, lda int, b, c *float32, ldc int)
//
// C[6×16] += A·B over k steps: A is 6 rows lda values apart (SI: rows 0-2,
// R11: rows 3-5), b holds 16 values per step, 64 values (256 bytes) apart.
// Y0-Y11 hold C, two registers a row.
TEXT ·tile6x16AVX2(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R10
	A_ROWS
	MOVQ b+24(FP), DI
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), R9
	SHLQ $2, R9
	ZERO_ROW256(Y0, Y1)
	ZERO_ROW256(Y2, Y3)
	ZERO_ROW256(Y4, Y5)
	ZERO_ROW256(Y6, Y7)
	ZERO_ROW256(Y8, Y9)
	ZERO_ROW256(Y10, Y11)
	TESTQ CX, CX
	JEQ tile2store

tile2loop:
	VMOVUPS (DI), Y12
	VMOVUPS 32(DI), Y13
	FMA_ROW256((SI), Y14, Y0, Y1)
	FMA_ROW256((SI)(R10*1), Y15, Y2, Y3)
	FMA_ROW256((SI)(R10*2), Y14, Y4, Y5)
	FMA_ROW256((R11), Y15, Y6, Y7)
	FMA_ROW256((R11)(R10*1), Y14, Y8, Y9)
	FMA_ROW256((R11)(R10*2), Y15, Y10, Y11)
	ADDQ $4, SI
	ADDQ $4, R11
	ADDQ $256, DI
	DECQ CX
	JNE tile2loop

tile2store:
	ADD_ROW256(Y0, Y1)
	ADDQ R9, DX
	ADD_ROW256(Y2, Y3)
	ADDQ R9, DX
	ADD_ROW256(Y4, Y5)
	ADDQ R9, DX
	ADD_ROW256(Y6, Y7)
	ADDQ R9, DX
	ADD_ROW256(Y8, Y9)
	ADDQ R9, DX
	ADD_ROW256(Y10, Y11)
	VZEROUPPER
	RET
