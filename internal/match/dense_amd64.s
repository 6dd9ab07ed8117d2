#include "textflag.h"

// func dotsInt8AVX2(q *int16, rows *int8, stride, n int, out *int32)
//
// For each of n rows of stride int8 values (stride a multiple of 64), out
// gets the exact integer dot product with q: the int8 values are widened to
// int16 and multiplied pairwise into four 8-lane int32 accumulators.
TEXT ·dotsInt8AVX2(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ rows+8(FP), DI
	MOVQ stride+16(FP), CX
	MOVQ n+24(FP), DX
	MOVQ out+32(FP), R8
	TESTQ DX, DX
	JZ   done

row:
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	XORQ  AX, AX
	MOVQ  SI, R9

inner:
	VPMOVSXBW (DI)(AX*1), Y4
	VPMOVSXBW 16(DI)(AX*1), Y5
	VPMOVSXBW 32(DI)(AX*1), Y6
	VPMOVSXBW 48(DI)(AX*1), Y7
	VPMADDWD  (R9), Y4, Y4
	VPMADDWD  32(R9), Y5, Y5
	VPMADDWD  64(R9), Y6, Y6
	VPMADDWD  96(R9), Y7, Y7
	VPADDD    Y4, Y0, Y0
	VPADDD    Y5, Y1, Y1
	VPADDD    Y6, Y2, Y2
	VPADDD    Y7, Y3, Y3
	ADDQ      $64, AX
	ADDQ      $128, R9
	CMPQ      AX, CX
	JLT       inner

	VPADDD       Y1, Y0, Y0
	VPADDD       Y3, Y2, Y2
	VPADDD       Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPHADDD      X0, X0, X0
	VPHADDD      X0, X0, X0
	VMOVD        X0, (R8)
	ADDQ         $4, R8
	ADDQ         CX, DI
	DECQ         DX
	JNZ          row
	VZEROUPPER

done:
	RET

// func dotLanes8AVX(q2 *float32, rows *[8]*float32, dim4 int, lanes *[32]float32)
//
// For eight rows, the four partial sums of dot's four accumulators over the
// first dim4 values (a multiple of 4): lane k of row r sums q[i]*row[i] for
// i ≡ k (mod 4), in order, each product rounded and then added, exactly as
// dot does it. Two rows share one 8-lane register. q2 holds q with each
// group of four values written twice.
TEXT ·dotLanes8AVX(SB), NOSPLIT, $0-32
	MOVQ q2+0(FP), SI
	MOVQ rows+8(FP), DI
	MOVQ dim4+16(FP), CX
	MOVQ lanes+24(FP), R8
	MOVQ 0(DI), R9
	MOVQ 8(DI), R10
	MOVQ 16(DI), R11
	MOVQ 24(DI), R12
	MOVQ 32(DI), R13
	MOVQ 40(DI), R14
	MOVQ 48(DI), R15
	MOVQ 56(DI), BX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	XORQ   AX, AX
	XORQ   DX, DX
	TESTQ  CX, CX
	JZ     store

loop:
	VMOVUPS      (SI)(DX*1), Y8
	VMOVUPS      (R9)(AX*1), X4
	VINSERTF128  $1, (R10)(AX*1), Y4, Y4
	VMOVUPS      (R11)(AX*1), X5
	VINSERTF128  $1, (R12)(AX*1), Y5, Y5
	VMOVUPS      (R13)(AX*1), X6
	VINSERTF128  $1, (R14)(AX*1), Y6, Y6
	VMOVUPS      (R15)(AX*1), X7
	VINSERTF128  $1, (BX)(AX*1), Y7, Y7
	VMULPS       Y8, Y4, Y4
	VMULPS       Y8, Y5, Y5
	VMULPS       Y8, Y6, Y6
	VMULPS       Y8, Y7, Y7
	VADDPS       Y4, Y0, Y0
	VADDPS       Y5, Y1, Y1
	VADDPS       Y6, Y2, Y2
	VADDPS       Y7, Y3, Y3
	ADDQ         $16, AX
	ADDQ         $32, DX
	SUBQ         $4, CX
	JNZ          loop

store:
	VMOVUPS Y0, 0(R8)
	VMOVUPS Y1, 32(R8)
	VMOVUPS Y2, 64(R8)
	VMOVUPS Y3, 96(R8)
	VZEROUPPER
	RET

// func dotsU8AVX512(q *uint8, rows *int8, stride, n int, out *int32)
//
// For each of n rows of stride int8 values (stride a multiple of 64), out
// gets the exact integer dot product with q, read as unsigned bytes:
// VPDPBUSD multiplies 64 byte pairs and adds them in groups of four into
// sixteen int32 lanes.
TEXT ·dotsU8AVX512(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ rows+8(FP), DI
	MOVQ stride+16(FP), CX
	MOVQ n+24(FP), DX
	MOVQ out+32(FP), R8
	TESTQ DX, DX
	JZ   u8done

u8row:
	VPXORD Z4, Z4, Z4
	XORQ   AX, AX

u8inner:
	VMOVDQU64 (SI)(AX*1), Z0
	VPDPBUSD  (DI)(AX*1), Z0, Z4
	ADDQ      $64, AX
	CMPQ      AX, CX
	JLT       u8inner

	VEXTRACTI64X4 $1, Z4, Y5
	VPADDD        Y5, Y4, Y4
	VEXTRACTI128  $1, Y4, X5
	VPADDD        X5, X4, X4
	VPHADDD       X4, X4, X4
	VPHADDD       X4, X4, X4
	VMOVD         X4, (R8)
	ADDQ          $4, R8
	ADDQ          CX, DI
	DECQ          DX
	JNZ           u8row
	VZEROUPPER

u8done:
	RET
