/*
 * library_types.h (kernel emulator) -- the data types of the CUDA libraries, with the values of
 * the real header (mul-mat-plan.h's constants are checked against them).
 */
#ifndef GGMLX_EMU_LIBRARY_TYPES_H
#define GGMLX_EMU_LIBRARY_TYPES_H

typedef enum cudaDataType_t {
    CUDA_R_32F  = 0,
    CUDA_R_16F  = 2,
    CUDA_R_16BF = 14,
} cudaDataType_t;

typedef cudaDataType_t cudaDataType;

#endif /* GGMLX_EMU_LIBRARY_TYPES_H */
