#include "textflag.h"
#include "reduce_amd64.h"

// Constants: each float32 (or int32) replicated 8 times, 32 bytes apart:
// AVX2 code reads all 8, AVX-512 code broadcasts the first. The names
// and values are those of mathf.go.

// one +0, half +32, expMin +64, expMax +96, log2e +128, ln2Hi +160, ln2Lo +192, expP0 +224, expP1 +256, expP2 +288, expP3 +320, expP4 +352, expP5 +384, invSqrt2 +416, erfClamp +448, erfClampNeg +480, erfA1 +512, erfA3 +544, erfA5 +576, erfA7 +608, erfA9 +640, erfA11 +672, erfA13 +704, erfB0 +736, erfB2 +768, erfB4 +800, erfB6 +832, erfB8 +864, erfcC0 +896, erfcC1 +928, erfcC2 +960, erfcC3 +992, erfcC4 +1024, erfcC5 +1056, erfcC6 +1088, erfcC7 +1120, erfcC8 +1152, erfcC9 +1184, absMask +1216, signMask +1248, bias127 +1280, negInf +1312
DATA consts<>+0(SB)/8, $0x3f8000003f800000
DATA consts<>+8(SB)/8, $0x3f8000003f800000
DATA consts<>+16(SB)/8, $0x3f8000003f800000
DATA consts<>+24(SB)/8, $0x3f8000003f800000
DATA consts<>+32(SB)/8, $0x3f0000003f000000
DATA consts<>+40(SB)/8, $0x3f0000003f000000
DATA consts<>+48(SB)/8, $0x3f0000003f000000
DATA consts<>+56(SB)/8, $0x3f0000003f000000
DATA consts<>+64(SB)/8, $0xc2a00000c2a00000
DATA consts<>+72(SB)/8, $0xc2a00000c2a00000
DATA consts<>+80(SB)/8, $0xc2a00000c2a00000
DATA consts<>+88(SB)/8, $0xc2a00000c2a00000
DATA consts<>+96(SB)/8, $0x42b0c0a542b0c0a5
DATA consts<>+104(SB)/8, $0x42b0c0a542b0c0a5
DATA consts<>+112(SB)/8, $0x42b0c0a542b0c0a5
DATA consts<>+120(SB)/8, $0x42b0c0a542b0c0a5
DATA consts<>+128(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA consts<>+136(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA consts<>+144(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA consts<>+152(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA consts<>+160(SB)/8, $0x3f3180003f318000
DATA consts<>+168(SB)/8, $0x3f3180003f318000
DATA consts<>+176(SB)/8, $0x3f3180003f318000
DATA consts<>+184(SB)/8, $0x3f3180003f318000
DATA consts<>+192(SB)/8, $0xb95e8083b95e8083
DATA consts<>+200(SB)/8, $0xb95e8083b95e8083
DATA consts<>+208(SB)/8, $0xb95e8083b95e8083
DATA consts<>+216(SB)/8, $0xb95e8083b95e8083
DATA consts<>+224(SB)/8, $0x3950696739506967
DATA consts<>+232(SB)/8, $0x3950696739506967
DATA consts<>+240(SB)/8, $0x3950696739506967
DATA consts<>+248(SB)/8, $0x3950696739506967
DATA consts<>+256(SB)/8, $0x3ab743ce3ab743ce
DATA consts<>+264(SB)/8, $0x3ab743ce3ab743ce
DATA consts<>+272(SB)/8, $0x3ab743ce3ab743ce
DATA consts<>+280(SB)/8, $0x3ab743ce3ab743ce
DATA consts<>+288(SB)/8, $0x3c0889083c088908
DATA consts<>+296(SB)/8, $0x3c0889083c088908
DATA consts<>+304(SB)/8, $0x3c0889083c088908
DATA consts<>+312(SB)/8, $0x3c0889083c088908
DATA consts<>+320(SB)/8, $0x3d2aa9c13d2aa9c1
DATA consts<>+328(SB)/8, $0x3d2aa9c13d2aa9c1
DATA consts<>+336(SB)/8, $0x3d2aa9c13d2aa9c1
DATA consts<>+344(SB)/8, $0x3d2aa9c13d2aa9c1
DATA consts<>+352(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA consts<>+360(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA consts<>+368(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA consts<>+376(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA consts<>+384(SB)/8, $0x3f0000003f000000
DATA consts<>+392(SB)/8, $0x3f0000003f000000
DATA consts<>+400(SB)/8, $0x3f0000003f000000
DATA consts<>+408(SB)/8, $0x3f0000003f000000
DATA consts<>+416(SB)/8, $0x3f3504f33f3504f3
DATA consts<>+424(SB)/8, $0x3f3504f33f3504f3
DATA consts<>+432(SB)/8, $0x3f3504f33f3504f3
DATA consts<>+440(SB)/8, $0x3f3504f33f3504f3
DATA consts<>+448(SB)/8, $0x4080000040800000
DATA consts<>+456(SB)/8, $0x4080000040800000
DATA consts<>+464(SB)/8, $0x4080000040800000
DATA consts<>+472(SB)/8, $0x4080000040800000
DATA consts<>+480(SB)/8, $0xc0800000c0800000
DATA consts<>+488(SB)/8, $0xc0800000c0800000
DATA consts<>+496(SB)/8, $0xc0800000c0800000
DATA consts<>+504(SB)/8, $0xc0800000c0800000
DATA consts<>+512(SB)/8, $0xbc83dbd4bc83dbd4
DATA consts<>+520(SB)/8, $0xbc83dbd4bc83dbd4
DATA consts<>+528(SB)/8, $0xbc83dbd4bc83dbd4
DATA consts<>+536(SB)/8, $0xbc83dbd4bc83dbd4
DATA consts<>+544(SB)/8, $0xbb41a1f6bb41a1f6
DATA consts<>+552(SB)/8, $0xbb41a1f6bb41a1f6
DATA consts<>+560(SB)/8, $0xbb41a1f6bb41a1f6
DATA consts<>+568(SB)/8, $0xbb41a1f6bb41a1f6
DATA consts<>+576(SB)/8, $0xba40ac63ba40ac63
DATA consts<>+584(SB)/8, $0xba40ac63ba40ac63
DATA consts<>+592(SB)/8, $0xba40ac63ba40ac63
DATA consts<>+600(SB)/8, $0xba40ac63ba40ac63
DATA consts<>+608(SB)/8, $0xb86ec2d2b86ec2d2
DATA consts<>+616(SB)/8, $0xb86ec2d2b86ec2d2
DATA consts<>+624(SB)/8, $0xb86ec2d2b86ec2d2
DATA consts<>+632(SB)/8, $0xb86ec2d2b86ec2d2
DATA consts<>+640(SB)/8, $0xb60cff51b60cff51
DATA consts<>+648(SB)/8, $0xb60cff51b60cff51
DATA consts<>+656(SB)/8, $0xb60cff51b60cff51
DATA consts<>+664(SB)/8, $0xb60cff51b60cff51
DATA consts<>+672(SB)/8, $0x32edffee32edffee
DATA consts<>+680(SB)/8, $0x32edffee32edffee
DATA consts<>+688(SB)/8, $0x32edffee32edffee
DATA consts<>+696(SB)/8, $0x32edffee32edffee
DATA consts<>+704(SB)/8, $0xaf95df0baf95df0b
DATA consts<>+712(SB)/8, $0xaf95df0baf95df0b
DATA consts<>+720(SB)/8, $0xaf95df0baf95df0b
DATA consts<>+728(SB)/8, $0xaf95df0baf95df0b
DATA consts<>+736(SB)/8, $0xbc69b6a7bc69b6a7
DATA consts<>+744(SB)/8, $0xbc69b6a7bc69b6a7
DATA consts<>+752(SB)/8, $0xbc69b6a7bc69b6a7
DATA consts<>+760(SB)/8, $0xbc69b6a7bc69b6a7
DATA consts<>+768(SB)/8, $0xbbf19bf8bbf19bf8
DATA consts<>+776(SB)/8, $0xbbf19bf8bbf19bf8
DATA consts<>+784(SB)/8, $0xbbf19bf8bbf19bf8
DATA consts<>+792(SB)/8, $0xbbf19bf8bbf19bf8
DATA consts<>+800(SB)/8, $0xbadc924ebadc924e
DATA consts<>+808(SB)/8, $0xbadc924ebadc924e
DATA consts<>+816(SB)/8, $0xbadc924ebadc924e
DATA consts<>+824(SB)/8, $0xbadc924ebadc924e
DATA consts<>+832(SB)/8, $0xb95fbd29b95fbd29
DATA consts<>+840(SB)/8, $0xb95fbd29b95fbd29
DATA consts<>+848(SB)/8, $0xb95fbd29b95fbd29
DATA consts<>+856(SB)/8, $0xb95fbd29b95fbd29
DATA consts<>+864(SB)/8, $0xb77460cdb77460cd
DATA consts<>+872(SB)/8, $0xb77460cdb77460cd
DATA consts<>+880(SB)/8, $0xb77460cdb77460cd
DATA consts<>+888(SB)/8, $0xb77460cdb77460cd
DATA consts<>+896(SB)/8, $0xbfa1fc4ebfa1fc4e
DATA consts<>+904(SB)/8, $0xbfa1fc4ebfa1fc4e
DATA consts<>+912(SB)/8, $0xbfa1fc4ebfa1fc4e
DATA consts<>+920(SB)/8, $0xbfa1fc4ebfa1fc4e
DATA consts<>+928(SB)/8, $0x3f8000c73f8000c7
DATA consts<>+936(SB)/8, $0x3f8000c73f8000c7
DATA consts<>+944(SB)/8, $0x3f8000c73f8000c7
DATA consts<>+952(SB)/8, $0x3f8000c73f8000c7
DATA consts<>+960(SB)/8, $0x3ebf88fb3ebf88fb
DATA consts<>+968(SB)/8, $0x3ebf88fb3ebf88fb
DATA consts<>+976(SB)/8, $0x3ebf88fb3ebf88fb
DATA consts<>+984(SB)/8, $0x3ebf88fb3ebf88fb
DATA consts<>+992(SB)/8, $0x3dc636c93dc636c9
DATA consts<>+1000(SB)/8, $0x3dc636c93dc636c9
DATA consts<>+1008(SB)/8, $0x3dc636c93dc636c9
DATA consts<>+1016(SB)/8, $0x3dc636c93dc636c9
DATA consts<>+1024(SB)/8, $0xbe3ec24cbe3ec24c
DATA consts<>+1032(SB)/8, $0xbe3ec24cbe3ec24c
DATA consts<>+1040(SB)/8, $0xbe3ec24cbe3ec24c
DATA consts<>+1048(SB)/8, $0xbe3ec24cbe3ec24c
DATA consts<>+1056(SB)/8, $0x3e8ec7cc3e8ec7cc
DATA consts<>+1064(SB)/8, $0x3e8ec7cc3e8ec7cc
DATA consts<>+1072(SB)/8, $0x3e8ec7cc3e8ec7cc
DATA consts<>+1080(SB)/8, $0x3e8ec7cc3e8ec7cc
DATA consts<>+1088(SB)/8, $0xbf914e5dbf914e5d
DATA consts<>+1096(SB)/8, $0xbf914e5dbf914e5d
DATA consts<>+1104(SB)/8, $0xbf914e5dbf914e5d
DATA consts<>+1112(SB)/8, $0xbf914e5dbf914e5d
DATA consts<>+1120(SB)/8, $0x3fbe87b03fbe87b0
DATA consts<>+1128(SB)/8, $0x3fbe87b03fbe87b0
DATA consts<>+1136(SB)/8, $0x3fbe87b03fbe87b0
DATA consts<>+1144(SB)/8, $0x3fbe87b03fbe87b0
DATA consts<>+1152(SB)/8, $0xbf527892bf527892
DATA consts<>+1160(SB)/8, $0xbf527892bf527892
DATA consts<>+1168(SB)/8, $0xbf527892bf527892
DATA consts<>+1176(SB)/8, $0xbf527892bf527892
DATA consts<>+1184(SB)/8, $0x3e2ef9453e2ef945
DATA consts<>+1192(SB)/8, $0x3e2ef9453e2ef945
DATA consts<>+1200(SB)/8, $0x3e2ef9453e2ef945
DATA consts<>+1208(SB)/8, $0x3e2ef9453e2ef945
DATA consts<>+1216(SB)/8, $0x7fffffff7fffffff
DATA consts<>+1224(SB)/8, $0x7fffffff7fffffff
DATA consts<>+1232(SB)/8, $0x7fffffff7fffffff
DATA consts<>+1240(SB)/8, $0x7fffffff7fffffff
DATA consts<>+1248(SB)/8, $0x8000000080000000
DATA consts<>+1256(SB)/8, $0x8000000080000000
DATA consts<>+1264(SB)/8, $0x8000000080000000
DATA consts<>+1272(SB)/8, $0x8000000080000000
DATA consts<>+1280(SB)/8, $0x0000007f0000007f
DATA consts<>+1288(SB)/8, $0x0000007f0000007f
DATA consts<>+1296(SB)/8, $0x0000007f0000007f
DATA consts<>+1304(SB)/8, $0x0000007f0000007f
DATA consts<>+1312(SB)/8, $0xff800000ff800000
DATA consts<>+1320(SB)/8, $0xff800000ff800000
DATA consts<>+1328(SB)/8, $0xff800000ff800000
DATA consts<>+1336(SB)/8, $0xff800000ff800000
GLOBL consts<>(SB), RODATA|NOPTR, $1344

// func maxAVX512(x *float32, n int) float32
//
// n is positive; the last n%16 values are read under a mask.
TEXT ·maxAVX512(SB), NOSPLIT, $0-20
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS consts<>+1312(SB), Z0
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
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K2
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
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K2
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

// func expSumAVX512(x *float32, n int, sub float32) float32
//
// Replaces each value v with exp(v-sub), 0 below expMin, and returns their
// sum. n is positive; the last n%16 values are read and written under a
// mask. Z16 holds the sum.
TEXT ·expSumAVX512(SB), NOSPLIT, $0-28
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS sub+16(FP), Z31
	VBROADCASTSS consts<>+64(SB), Z30
	VPXORD Z16, Z16, Z16
	CMPQ CX, $16
	JLT expsum512tail

expsum512loop:
	VMOVUPS (SI), Z0
	VSUBPS Z31, Z0, Z0
	VCMPPS $13, Z30, Z0, K1
	VMAXPS Z30, Z0, Z0
	VMINPS.BCST consts<>+96(SB), Z0, Z0
	VMULPS.BCST consts<>+128(SB), Z0, Z2
	VRNDSCALEPS $0, Z2, Z2
	VMOVAPS Z0, Z3
	VFNMADD231PS.BCST consts<>+160(SB), Z2, Z3
	VFNMADD231PS.BCST consts<>+192(SB), Z2, Z3
	VBROADCASTSS consts<>+224(SB), Z1
	VFMADD213PS.BCST consts<>+256(SB), Z3, Z1
	VFMADD213PS.BCST consts<>+288(SB), Z3, Z1
	VFMADD213PS.BCST consts<>+320(SB), Z3, Z1
	VFMADD213PS.BCST consts<>+352(SB), Z3, Z1
	VFMADD213PS.BCST consts<>+384(SB), Z3, Z1
	VMULPS Z3, Z3, Z4
	VFMADD213PS Z3, Z4, Z1
	VADDPS.BCST consts<>+0(SB), Z1, Z1
	VSCALEFPS Z2, Z1, Z1
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
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K2
	VMOVUPS.Z (SI), K2, Z0
	VSUBPS Z31, Z0, Z0
	VCMPPS $13, Z30, Z0, K1
	VMAXPS Z30, Z0, Z0
	VMINPS.BCST consts<>+96(SB), Z0, Z0
	VMULPS.BCST consts<>+128(SB), Z0, Z2
	VRNDSCALEPS $0, Z2, Z2
	VMOVAPS Z0, Z3
	VFNMADD231PS.BCST consts<>+160(SB), Z2, Z3
	VFNMADD231PS.BCST consts<>+192(SB), Z2, Z3
	VBROADCASTSS consts<>+224(SB), Z1
	VFMADD213PS.BCST consts<>+256(SB), Z3, Z1
	VFMADD213PS.BCST consts<>+288(SB), Z3, Z1
	VFMADD213PS.BCST consts<>+320(SB), Z3, Z1
	VFMADD213PS.BCST consts<>+352(SB), Z3, Z1
	VFMADD213PS.BCST consts<>+384(SB), Z3, Z1
	VMULPS Z3, Z3, Z4
	VFMADD213PS Z3, Z4, Z1
	VADDPS.BCST consts<>+0(SB), Z1, Z1
	VSCALEFPS Z2, Z1, Z1
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
	VMOVUPS consts<>+64(SB), Y14
	VXORPS Y8, Y8, Y8

expsum2loop:
	VMOVUPS (SI), Y0
	VSUBPS Y15, Y0, Y0
	VCMPPS $13, Y14, Y0, Y5
	VMAXPS Y14, Y0, Y0
	VMINPS consts<>+96(SB), Y0, Y0
	VMULPS consts<>+128(SB), Y0, Y2
	VROUNDPS $0, Y2, Y2
	VMOVAPS Y0, Y3
	VFNMADD231PS consts<>+160(SB), Y2, Y3
	VFNMADD231PS consts<>+192(SB), Y2, Y3
	VMOVUPS consts<>+224(SB), Y1
	VFMADD213PS consts<>+256(SB), Y3, Y1
	VFMADD213PS consts<>+288(SB), Y3, Y1
	VFMADD213PS consts<>+320(SB), Y3, Y1
	VFMADD213PS consts<>+352(SB), Y3, Y1
	VFMADD213PS consts<>+384(SB), Y3, Y1
	VMULPS Y3, Y3, Y4
	VFMADD213PS Y3, Y4, Y1
	VADDPS consts<>+0(SB), Y1, Y1
	VCVTPS2DQ Y2, Y2
	VPADDD consts<>+1280(SB), Y2, Y2
	VPSLLD $23, Y2, Y2
	VMULPS Y2, Y1, Y1
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
	VBROADCASTSS consts<>+32(SB), Z31

gelu512loop:
	VMOVUPS (SI), Z0
	VMULPS.BCST consts<>+416(SB), Z0, Z1
	VMINPS.BCST consts<>+448(SB), Z1, Z1
	VMAXPS.BCST consts<>+480(SB), Z1, Z1
	VPANDD.BCST consts<>+1216(SB), Z1, Z2
	VCMPPS $1, Z31, Z2, K1
	VMULPS Z1, Z1, Z3
	VBROADCASTSS consts<>+704(SB), Z4
	VFMADD213PS.BCST consts<>+672(SB), Z3, Z4
	VFMADD213PS.BCST consts<>+640(SB), Z3, Z4
	VFMADD213PS.BCST consts<>+608(SB), Z3, Z4
	VFMADD213PS.BCST consts<>+576(SB), Z3, Z4
	VFMADD213PS.BCST consts<>+544(SB), Z3, Z4
	VFMADD213PS.BCST consts<>+512(SB), Z3, Z4
	VMULPS Z1, Z4, Z4
	VBROADCASTSS consts<>+864(SB), Z5
	VFMADD213PS.BCST consts<>+832(SB), Z3, Z5
	VFMADD213PS.BCST consts<>+800(SB), Z3, Z5
	VFMADD213PS.BCST consts<>+768(SB), Z3, Z5
	VFMADD213PS.BCST consts<>+736(SB), Z3, Z5
	VDIVPS Z5, Z4, Z4
	VMULPS Z31, Z2, Z6
	VADDPS.BCST consts<>+0(SB), Z6, Z6
	VBROADCASTSS consts<>+0(SB), Z7
	VDIVPS Z6, Z7, Z6
	VBROADCASTSS consts<>+1184(SB), Z7
	VFMADD213PS.BCST consts<>+1152(SB), Z6, Z7
	VFMADD213PS.BCST consts<>+1120(SB), Z6, Z7
	VFMADD213PS.BCST consts<>+1088(SB), Z6, Z7
	VFMADD213PS.BCST consts<>+1056(SB), Z6, Z7
	VFMADD213PS.BCST consts<>+1024(SB), Z6, Z7
	VFMADD213PS.BCST consts<>+992(SB), Z6, Z7
	VFMADD213PS.BCST consts<>+960(SB), Z6, Z7
	VFMADD213PS.BCST consts<>+928(SB), Z6, Z7
	VFMADD213PS.BCST consts<>+896(SB), Z6, Z7
	VFNMADD231PS Z2, Z2, Z7
	VMULPS.BCST consts<>+128(SB), Z7, Z9
	VRNDSCALEPS $0, Z9, Z9
	VMOVAPS Z7, Z10
	VFNMADD231PS.BCST consts<>+160(SB), Z9, Z10
	VFNMADD231PS.BCST consts<>+192(SB), Z9, Z10
	VBROADCASTSS consts<>+224(SB), Z8
	VFMADD213PS.BCST consts<>+256(SB), Z10, Z8
	VFMADD213PS.BCST consts<>+288(SB), Z10, Z8
	VFMADD213PS.BCST consts<>+320(SB), Z10, Z8
	VFMADD213PS.BCST consts<>+352(SB), Z10, Z8
	VFMADD213PS.BCST consts<>+384(SB), Z10, Z8
	VMULPS Z10, Z10, Z11
	VFMADD213PS Z10, Z11, Z8
	VADDPS.BCST consts<>+0(SB), Z8, Z8
	VSCALEFPS Z9, Z8, Z8
	VMULPS Z6, Z8, Z8
	VBROADCASTSS consts<>+0(SB), Z12
	VSUBPS Z8, Z12, Z12
	VPANDD.BCST consts<>+1248(SB), Z1, Z13
	VPORD Z13, Z12, Z12
	VMOVAPS Z4, K1, Z12
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
	VMOVUPS consts<>+32(SB), Y15

gelu2loop:
	VMOVUPS (SI), Y0
	VMULPS consts<>+416(SB), Y0, Y1
	VMINPS consts<>+448(SB), Y1, Y1
	VMAXPS consts<>+480(SB), Y1, Y1
	VANDPS consts<>+1216(SB), Y1, Y2
	VCMPPS $1, Y15, Y2, Y14
	VMULPS Y1, Y1, Y3
	VMOVUPS consts<>+704(SB), Y4
	VFMADD213PS consts<>+672(SB), Y3, Y4
	VFMADD213PS consts<>+640(SB), Y3, Y4
	VFMADD213PS consts<>+608(SB), Y3, Y4
	VFMADD213PS consts<>+576(SB), Y3, Y4
	VFMADD213PS consts<>+544(SB), Y3, Y4
	VFMADD213PS consts<>+512(SB), Y3, Y4
	VMULPS Y1, Y4, Y4
	VMOVUPS consts<>+864(SB), Y5
	VFMADD213PS consts<>+832(SB), Y3, Y5
	VFMADD213PS consts<>+800(SB), Y3, Y5
	VFMADD213PS consts<>+768(SB), Y3, Y5
	VFMADD213PS consts<>+736(SB), Y3, Y5
	VDIVPS Y5, Y4, Y4
	VMULPS Y15, Y2, Y6
	VADDPS consts<>+0(SB), Y6, Y6
	VMOVUPS consts<>+0(SB), Y7
	VDIVPS Y6, Y7, Y6
	VMOVUPS consts<>+1184(SB), Y7
	VFMADD213PS consts<>+1152(SB), Y6, Y7
	VFMADD213PS consts<>+1120(SB), Y6, Y7
	VFMADD213PS consts<>+1088(SB), Y6, Y7
	VFMADD213PS consts<>+1056(SB), Y6, Y7
	VFMADD213PS consts<>+1024(SB), Y6, Y7
	VFMADD213PS consts<>+992(SB), Y6, Y7
	VFMADD213PS consts<>+960(SB), Y6, Y7
	VFMADD213PS consts<>+928(SB), Y6, Y7
	VFMADD213PS consts<>+896(SB), Y6, Y7
	VFNMADD231PS Y2, Y2, Y7
	VMULPS consts<>+128(SB), Y7, Y9
	VROUNDPS $0, Y9, Y9
	VMOVAPS Y7, Y10
	VFNMADD231PS consts<>+160(SB), Y9, Y10
	VFNMADD231PS consts<>+192(SB), Y9, Y10
	VMOVUPS consts<>+224(SB), Y8
	VFMADD213PS consts<>+256(SB), Y10, Y8
	VFMADD213PS consts<>+288(SB), Y10, Y8
	VFMADD213PS consts<>+320(SB), Y10, Y8
	VFMADD213PS consts<>+352(SB), Y10, Y8
	VFMADD213PS consts<>+384(SB), Y10, Y8
	VMULPS Y10, Y10, Y11
	VFMADD213PS Y10, Y11, Y8
	VADDPS consts<>+0(SB), Y8, Y8
	VCVTPS2DQ Y9, Y9
	VPADDD consts<>+1280(SB), Y9, Y9
	VPSLLD $23, Y9, Y9
	VMULPS Y9, Y8, Y8
	VMULPS Y6, Y8, Y8
	VMOVUPS consts<>+0(SB), Y12
	VSUBPS Y8, Y12, Y12
	VANDPS consts<>+1248(SB), Y1, Y13
	VORPS Y13, Y12, Y12
	VBLENDVPS Y14, Y4, Y12, Y12
	VFMADD213PS Y15, Y15, Y12
	VMULPS Y12, Y0, Y0
	VMOVUPS Y0, (SI)
	ADDQ $32, SI
	SUBQ $8, CX
	JNE gelu2loop
	VZEROUPPER
	RET
