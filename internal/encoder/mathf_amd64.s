#include "textflag.h"
#include "reduce_amd64.h"

// Constants: each float32 (or int32) replicated 8 times, 32 bytes apart:
// AVX2 code reads all 8, AVX-512 code broadcasts the first. The names
// and values are those of mathf.go; signMask and absMask select a float's
// sign and the rest, bias127 is float32's exponent bias, negInf is −∞.

// SPLAT(off, bits) writes the 8 bytes bits 4 times from consts<>+off.
#define SPLAT(off, bits) \
	DATA consts<>+off(SB)/8, bits; \
	DATA consts<>+off+8(SB)/8, bits; \
	DATA consts<>+off+16(SB)/8, bits; \
	DATA consts<>+off+24(SB)/8, bits

#define one consts<>+0(SB)
SPLAT(0, $0x3f8000003f800000)
#define half consts<>+32(SB)
SPLAT(32, $0x3f0000003f000000)
#define expMin consts<>+64(SB)
SPLAT(64, $0xc2a00000c2a00000)
#define expMax consts<>+96(SB)
SPLAT(96, $0x42b0c0a542b0c0a5)
#define log2e consts<>+128(SB)
SPLAT(128, $0x3fb8aa3b3fb8aa3b)
#define ln2Hi consts<>+160(SB)
SPLAT(160, $0x3f3180003f318000)
#define ln2Lo consts<>+192(SB)
SPLAT(192, $0xb95e8083b95e8083)
#define expP0 consts<>+224(SB)
SPLAT(224, $0x3950696739506967)
#define expP1 consts<>+256(SB)
SPLAT(256, $0x3ab743ce3ab743ce)
#define expP2 consts<>+288(SB)
SPLAT(288, $0x3c0889083c088908)
#define expP3 consts<>+320(SB)
SPLAT(320, $0x3d2aa9c13d2aa9c1)
#define expP4 consts<>+352(SB)
SPLAT(352, $0x3e2aaaaa3e2aaaaa)
#define expP5 consts<>+384(SB)
SPLAT(384, $0x3f0000003f000000)
#define invSqrt2 consts<>+416(SB)
SPLAT(416, $0x3f3504f33f3504f3)
#define erfClamp consts<>+448(SB)
SPLAT(448, $0x4080000040800000)
#define erfClampNeg consts<>+480(SB)
SPLAT(480, $0xc0800000c0800000)
#define erfA1 consts<>+512(SB)
SPLAT(512, $0xbc83dbd4bc83dbd4)
#define erfA3 consts<>+544(SB)
SPLAT(544, $0xbb41a1f6bb41a1f6)
#define erfA5 consts<>+576(SB)
SPLAT(576, $0xba40ac63ba40ac63)
#define erfA7 consts<>+608(SB)
SPLAT(608, $0xb86ec2d2b86ec2d2)
#define erfA9 consts<>+640(SB)
SPLAT(640, $0xb60cff51b60cff51)
#define erfA11 consts<>+672(SB)
SPLAT(672, $0x32edffee32edffee)
#define erfA13 consts<>+704(SB)
SPLAT(704, $0xaf95df0baf95df0b)
#define erfB0 consts<>+736(SB)
SPLAT(736, $0xbc69b6a7bc69b6a7)
#define erfB2 consts<>+768(SB)
SPLAT(768, $0xbbf19bf8bbf19bf8)
#define erfB4 consts<>+800(SB)
SPLAT(800, $0xbadc924ebadc924e)
#define erfB6 consts<>+832(SB)
SPLAT(832, $0xb95fbd29b95fbd29)
#define erfB8 consts<>+864(SB)
SPLAT(864, $0xb77460cdb77460cd)
#define erfcC0 consts<>+896(SB)
SPLAT(896, $0xbfa1fc4ebfa1fc4e)
#define erfcC1 consts<>+928(SB)
SPLAT(928, $0x3f8000c73f8000c7)
#define erfcC2 consts<>+960(SB)
SPLAT(960, $0x3ebf88fb3ebf88fb)
#define erfcC3 consts<>+992(SB)
SPLAT(992, $0x3dc636c93dc636c9)
#define erfcC4 consts<>+1024(SB)
SPLAT(1024, $0xbe3ec24cbe3ec24c)
#define erfcC5 consts<>+1056(SB)
SPLAT(1056, $0x3e8ec7cc3e8ec7cc)
#define erfcC6 consts<>+1088(SB)
SPLAT(1088, $0xbf914e5dbf914e5d)
#define erfcC7 consts<>+1120(SB)
SPLAT(1120, $0x3fbe87b03fbe87b0)
#define erfcC8 consts<>+1152(SB)
SPLAT(1152, $0xbf527892bf527892)
#define erfcC9 consts<>+1184(SB)
SPLAT(1184, $0x3e2ef9453e2ef945)
#define absMask consts<>+1216(SB)
SPLAT(1216, $0x7fffffff7fffffff)
#define signMask consts<>+1248(SB)
SPLAT(1248, $0x8000000080000000)
#define bias127 consts<>+1280(SB)
SPLAT(1280, $0x0000007f0000007f)
#define negInf consts<>+1312(SB)
SPLAT(1312, $0xff800000ff800000)
GLOBL consts<>(SB), RODATA|NOPTR, $1344

// The exponential, as expf in mathf.go, for x already clamped to
// [expMin, expMax]: n = round(x·log2e), r = x − n·ln2 (ln2 in two parts,
// ln2Hi and ln2Lo), p = 1 + r + r²·P(r) with the Cephes polynomial P
// (expP0..expP5), then p·2ⁿ. Both macros leave x as it was and use n, r
// and t as scratch; n ends holding 2ⁿ (AVX2) or round(x·log2e) (AVX-512).

// EXP512(x, n, r, p, t) sets p = exp(x) for the 16 lanes of x, scaling by
// 2ⁿ with VSCALEFPS.
#define EXP512(x, n, r, p, t) \
	VMULPS.BCST log2e, x, n; \
	VRNDSCALEPS $0, n, n; \
	VMOVAPS x, r; \
	VFNMADD231PS.BCST ln2Hi, n, r; \
	VFNMADD231PS.BCST ln2Lo, n, r; \
	VBROADCASTSS expP0, p; \
	VFMADD213PS.BCST expP1, r, p; \
	VFMADD213PS.BCST expP2, r, p; \
	VFMADD213PS.BCST expP3, r, p; \
	VFMADD213PS.BCST expP4, r, p; \
	VFMADD213PS.BCST expP5, r, p; \
	VMULPS r, r, t; \
	VFMADD213PS r, t, p; \
	VADDPS.BCST one, p, p; \
	VSCALEFPS n, p, p

// EXP256(x, n, r, p, t) sets p = exp(x) for the 8 lanes of x, building 2ⁿ
// in the exponent bits (n+bias127, shifted left 23).
#define EXP256(x, n, r, p, t) \
	VMULPS log2e, x, n; \
	VROUNDPS $0, n, n; \
	VMOVAPS x, r; \
	VFNMADD231PS ln2Hi, n, r; \
	VFNMADD231PS ln2Lo, n, r; \
	VMOVUPS expP0, p; \
	VFMADD213PS expP1, r, p; \
	VFMADD213PS expP2, r, p; \
	VFMADD213PS expP3, r, p; \
	VFMADD213PS expP4, r, p; \
	VFMADD213PS expP5, r, p; \
	VMULPS r, r, t; \
	VFMADD213PS r, t, p; \
	VADDPS one, p, p; \
	VCVTPS2DQ n, n; \
	VPADDD bias127, n, n; \
	VPSLLD $23, n, n; \
	VMULPS n, p, p

// TAIL_MASK_K2 sets K2 to the low CX lanes (0 < CX < 16): the values of
// a last, partial vector, which the AVX-512 kernels read and write under
// K2. Clobbers AX.
#define TAIL_MASK_K2 \
	MOVQ $1, AX; \
	SHLQ CX, AX; \
	DECQ AX; \
	KMOVW AX, K2

// func maxAVX512(x *float32, n int) float32
//
// n is positive; the last n%16 values are read under a mask.
TEXT ·maxAVX512(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS negInf, Z0
	CMPQ CX, $16
	JLT max512tail

max512loop:
	VMAXPS (SI), Z0, Z0
	ADDQ $64, SI
	SUBQ $16, CX
	CMPQ CX, $16
	JGE max512loop

max512tail:
	TESTQ CX, CX
	JEQ max512reduce
	TAIL_MASK_K2
	VMOVAPS Z0, Z1
	VMOVUPS (SI), K2, Z1
	VMAXPS Z1, Z0, Z0

max512reduce:
	REDUCE_Z0(VMAXPS)
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func maxAVX2(x *float32, n int) float32
//
// n is a positive multiple of 8.
TEXT ·maxAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VMOVUPS (SI), Y0
	ADDQ $32, SI
	SUBQ $8, CX
	JEQ max2reduce

max2loop:
	VMAXPS (SI), Y0, Y0
	ADDQ $32, SI
	SUBQ $8, CX
	JNE max2loop

max2reduce:
	REDUCE_Y0(VMAXPS)
	VMOVSS X0, ret+16(FP)
	VZEROUPPER
	RET

// func scaleAVX512(x *float32, n int, s float32)
//
// n is positive; the last n%16 values are read and written under a mask.
TEXT ·scaleAVX512(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS s+16(FP), Z1
	CMPQ CX, $16
	JLT scale512tail

scale512loop:
	VMULPS (SI), Z1, Z0
	VMOVUPS Z0, (SI)
	ADDQ $64, SI
	SUBQ $16, CX
	CMPQ CX, $16
	JGE scale512loop

scale512tail:
	TESTQ CX, CX
	JEQ scale512done
	TAIL_MASK_K2
	VMOVUPS.Z (SI), K2, Z0
	VMULPS Z0, Z1, Z0
	VMOVUPS Z0, K2, (SI)

scale512done:
	VZEROUPPER
	RET

// func scaleAVX2(x *float32, n int, s float32)
//
// n is a positive multiple of 8.
TEXT ·scaleAVX2(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS s+16(FP), Y1

scale2loop:
	VMULPS (SI), Y1, Y0
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	SUBQ $8, CX
	JNE scale2loop
	VZEROUPPER
	RET

// EXP_SUB512 is a step of expSumAVX512: Z1 = exp(Z0−Z31) with Z0−Z31
// clamped to [expMin, expMax] (Z30 holds expMin), and K1 the lanes where
// Z0−Z31 ≥ expMin (the caller zeroes the others). Clobbers Z0, Z2-Z4.
#define EXP_SUB512 \
	VSUBPS Z31, Z0, Z0; \
	VCMPPS $13, Z30, Z0, K1; \
	VMAXPS Z30, Z0, Z0; \
	VMINPS.BCST expMax, Z0, Z0; \
	EXP512(Z0, Z2, Z3, Z1, Z4)

// func expSumAVX512(x *float32, n int, sub float32) float32
//
// Replaces each value v with exp(v-sub), 0 below expMin, and returns their
// sum. n is positive; the last n%16 values are read and written under a
// mask. Z16 holds the sum.
TEXT ·expSumAVX512(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS sub+16(FP), Z31
	VBROADCASTSS expMin, Z30
	VPXORD Z16, Z16, Z16
	CMPQ CX, $16
	JLT expsum512tail

expsum512loop:
	VMOVUPS (SI), Z0
	EXP_SUB512
	VMOVAPS.Z Z1, K1, Z1
	VMOVUPS Z1, (SI)
	VADDPS Z1, Z16, Z16
	ADDQ $64, SI
	SUBQ $16, CX
	CMPQ CX, $16
	JGE expsum512loop

expsum512tail:
	TESTQ CX, CX
	JEQ expsum512reduce
	TAIL_MASK_K2
	VMOVUPS.Z (SI), K2, Z0
	EXP_SUB512
	KANDW K1, K2, K1
	VMOVAPS.Z Z1, K1, Z1
	VMOVUPS Z1, K2, (SI)
	VADDPS Z1, Z16, Z16

expsum512reduce:
	VMOVAPS Z16, Z0
	REDUCE_Z0(VADDPS)
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func expSumAVX2(x *float32, n int, sub float32) float32
//
// Replaces each value v with exp(v-sub), 0 below expMin, and returns their
// sum. n is a positive multiple of 8. Y8 holds the sum.
TEXT ·expSumAVX2(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS sub+16(FP), Y15
	VMOVUPS expMin, Y14
	VXORPS Y8, Y8, Y8

expsum2loop:
	VMOVUPS (SI), Y0
	VSUBPS Y15, Y0, Y0
	VCMPPS $13, Y14, Y0, Y5
	VMAXPS Y14, Y0, Y0
	VMINPS expMax, Y0, Y0
	EXP256(Y0, Y2, Y3, Y1, Y4)
	VANDPS Y5, Y1, Y1
	VMOVUPS Y1, (SI)
	VADDPS Y1, Y8, Y8
	ADDQ $32, SI
	SUBQ $8, CX
	JNE expsum2loop
	VMOVAPS Y8, Y0
	REDUCE_Y0(VADDPS)
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func geluAVX512(x *float32, n int)
//
// Replaces each value v with v·(1+erf(v/√2))/2, erf as in mathf.go. n is a
// positive multiple of 16. Z31 holds 0.5.
TEXT ·geluAVX512(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS half, Z31

gelu512loop:
	VMOVUPS (SI), Z0
	// Z1 = v/√2 clamped to ±erfClamp, Z2 = |Z1|; K1 marks |Z1| < 0.5 (erfSplit).
	VMULPS.BCST invSqrt2, Z0, Z1
	VMINPS.BCST erfClamp, Z1, Z1
	VMAXPS.BCST erfClampNeg, Z1, Z1
	VPANDD.BCST absMask, Z1, Z2
	VCMPPS $1, Z31, Z2, K1
	VMULPS Z1, Z1, Z3
	// Z4 = Z1·P(Z1²)/Q(Z1²), erf below erfSplit.
	VBROADCASTSS erfA13, Z4
	VFMADD213PS.BCST erfA11, Z3, Z4
	VFMADD213PS.BCST erfA9, Z3, Z4
	VFMADD213PS.BCST erfA7, Z3, Z4
	VFMADD213PS.BCST erfA5, Z3, Z4
	VFMADD213PS.BCST erfA3, Z3, Z4
	VFMADD213PS.BCST erfA1, Z3, Z4
	VMULPS Z1, Z4, Z4
	VBROADCASTSS erfB8, Z5
	VFMADD213PS.BCST erfB6, Z3, Z5
	VFMADD213PS.BCST erfB4, Z3, Z5
	VFMADD213PS.BCST erfB2, Z3, Z5
	VFMADD213PS.BCST erfB0, Z3, Z5
	VDIVPS Z5, Z4, Z4
	// Z6 = t = 1/(1+Z2/2), Z7 = R(t) − Z2², erf above: 1 − t·exp(Z7).
	VMULPS Z31, Z2, Z6
	VADDPS.BCST one, Z6, Z6
	VBROADCASTSS one, Z7
	VDIVPS Z6, Z7, Z6
	VBROADCASTSS erfcC9, Z7
	VFMADD213PS.BCST erfcC8, Z6, Z7
	VFMADD213PS.BCST erfcC7, Z6, Z7
	VFMADD213PS.BCST erfcC6, Z6, Z7
	VFMADD213PS.BCST erfcC5, Z6, Z7
	VFMADD213PS.BCST erfcC4, Z6, Z7
	VFMADD213PS.BCST erfcC3, Z6, Z7
	VFMADD213PS.BCST erfcC2, Z6, Z7
	VFMADD213PS.BCST erfcC1, Z6, Z7
	VFMADD213PS.BCST erfcC0, Z6, Z7
	VFNMADD231PS Z2, Z2, Z7
	EXP512(Z7, Z9, Z10, Z8, Z11)
	VMULPS Z6, Z8, Z8
	VBROADCASTSS one, Z12
	VSUBPS Z8, Z12, Z12
	VPANDD.BCST signMask, Z1, Z13
	VPORD Z13, Z12, Z12
	VMOVAPS Z4, K1, Z12
	// v·(erf·0.5 + 0.5)
	VFMADD213PS Z31, Z31, Z12
	VMULPS Z12, Z0, Z0
	VMOVUPS Z0, (SI)
	ADDQ $64, SI
	SUBQ $16, CX
	JNE gelu512loop
	VZEROUPPER
	RET

// func geluAVX2(x *float32, n int)
//
// Replaces each value v with v·(1+erf(v/√2))/2, erf as in mathf.go. n is a
// positive multiple of 8. Y15 holds 0.5.
TEXT ·geluAVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VMOVUPS half, Y15

gelu2loop:
	VMOVUPS (SI), Y0
	// Y1 = v/√2 clamped to ±erfClamp, Y2 = |Y1|; Y14 marks |Y1| < 0.5 (erfSplit).
	VMULPS invSqrt2, Y0, Y1
	VMINPS erfClamp, Y1, Y1
	VMAXPS erfClampNeg, Y1, Y1
	VANDPS absMask, Y1, Y2
	VCMPPS $1, Y15, Y2, Y14
	VMULPS Y1, Y1, Y3
	// Y4 = Y1·P(Y1²)/Q(Y1²), erf below erfSplit.
	VMOVUPS erfA13, Y4
	VFMADD213PS erfA11, Y3, Y4
	VFMADD213PS erfA9, Y3, Y4
	VFMADD213PS erfA7, Y3, Y4
	VFMADD213PS erfA5, Y3, Y4
	VFMADD213PS erfA3, Y3, Y4
	VFMADD213PS erfA1, Y3, Y4
	VMULPS Y1, Y4, Y4
	VMOVUPS erfB8, Y5
	VFMADD213PS erfB6, Y3, Y5
	VFMADD213PS erfB4, Y3, Y5
	VFMADD213PS erfB2, Y3, Y5
	VFMADD213PS erfB0, Y3, Y5
	VDIVPS Y5, Y4, Y4
	// Y6 = t = 1/(1+Y2/2), Y7 = R(t) − Y2², erf above: 1 − t·exp(Y7).
	VMULPS Y15, Y2, Y6
	VADDPS one, Y6, Y6
	VMOVUPS one, Y7
	VDIVPS Y6, Y7, Y6
	VMOVUPS erfcC9, Y7
	VFMADD213PS erfcC8, Y6, Y7
	VFMADD213PS erfcC7, Y6, Y7
	VFMADD213PS erfcC6, Y6, Y7
	VFMADD213PS erfcC5, Y6, Y7
	VFMADD213PS erfcC4, Y6, Y7
	VFMADD213PS erfcC3, Y6, Y7
	VFMADD213PS erfcC2, Y6, Y7
	VFMADD213PS erfcC1, Y6, Y7
	VFMADD213PS erfcC0, Y6, Y7
	VFNMADD231PS Y2, Y2, Y7
	EXP256(Y7, Y9, Y10, Y8, Y11)
	VMULPS Y6, Y8, Y8
	VMOVUPS one, Y12
	VSUBPS Y8, Y12, Y12
	VANDPS signMask, Y1, Y13
	VORPS Y13, Y12, Y12
	VBLENDVPS Y14, Y4, Y12, Y12
	// v·(erf·0.5 + 0.5)
	VFMADD213PS Y15, Y15, Y12
	VMULPS Y12, Y0, Y0
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	SUBQ $8, CX
	JNE gelu2loop
	VZEROUPPER
	RET
