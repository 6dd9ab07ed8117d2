// Horizontal reductions shared by the kernels of mathf_amd64.s and
// norm_amd64.s. OP is a two-source packed instruction (VADDPS, VMAXPS)
// folding a vector's lanes in halves; the result is left in lane 0 of X0,
// where the caller stores it or keeps computing in scalar.

// REDUCE_X0(OP) folds the 4 lanes of X0 into lane 0 of X0. Clobbers X1.
#define REDUCE_X0(OP) \
	VPERMILPS $0x4e, X0, X1; \
	OP X1, X0, X0; \
	VPERMILPS $0xb1, X0, X1; \
	OP X1, X0, X0

// REDUCE_Y0(OP) folds the 8 lanes of Y0 into lane 0 of X0. Clobbers Y1.
#define REDUCE_Y0(OP) \
	VEXTRACTF128 $1, Y0, X1; \
	OP X1, X0, X0; \
	REDUCE_X0(OP)

// REDUCE_Z0(OP) folds the 16 lanes of Z0 into lane 0 of X0. Clobbers Z1.
#define REDUCE_Z0(OP) \
	VEXTRACTF64X4 $1, Z0, Y1; \
	OP Y1, Y0, Y0; \
	REDUCE_Y0(OP)
