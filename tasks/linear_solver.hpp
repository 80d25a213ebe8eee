#pragma once

#include <complex>
#include <cstddef>
#include <memory>
#include <vector>

namespace rtcosim::tasks {

/*
 * ShiftedLu: the LU factorisation (partial pivoting) of W = I - c J for a
 * dense n x n matrix J, as the linearly implicit (Rosenbrock) integrators
 * need once per step, and solves with it: an unblocked LU of our own (the
 * reason is in linear_solver.cpp); `eigenvalues` is Eigen's, kept out of
 * this header so that the partition's translation unit does not compile it.
 *
 * Set-up: the constructor allocates every buffer. Real time: `factor` and
 * `solve` are noexcept and allocate nothing (the partition's allocation
 * test holds them to it). One thread owns an instance.
 */
class ShiftedLu {
 public:
  explicit ShiftedLu(std::size_t n);
  ~ShiftedLu();
  ShiftedLu(const ShiftedLu&) = delete;
  ShiftedLu& operator=(const ShiftedLu&) = delete;

  // J column-major (J[i + n j] = d f_i / d x_j). False when W is singular
  // or not finite (a pivot 0, NaN or infinite); solve is then undefined.
  bool factor(const double* jacobian, double c) noexcept;
  // b := W^-1 b.
  void solve(double* b) const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Not RT: the eigenvalues of a dense n x n column-major matrix (the
// configuration check's linearisation of a partition).
std::vector<std::complex<double>> eigenvalues(const double* matrix, std::size_t n);

}  // namespace rtcosim::tasks
