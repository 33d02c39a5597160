# find_package(tgv_gemm): the targets tgv_gemm::tgv_gemm (shared) and
# tgv_gemm::tgv_gemm_static, which link the CUDA runtime, cuBLAS and cuBLASLt.
include(CMakeFindDependencyMacro)
find_dependency(CUDAToolkit)
include("${CMAKE_CURRENT_LIST_DIR}/tgv_gemm-targets.cmake")
