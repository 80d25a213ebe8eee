#include "tasks/linear_solver.hpp"

#include <cmath>
#include <utility>

#include <Eigen/Dense>

namespace rtcosim::tasks {

// An unblocked LU with partial pivoting in place, our own rather than
// Eigen's PartialPivLU: Eigen's blocked factorisation takes its packing
// buffers from the heap above its stack limit (n >= 400 here: 2 mallocs
// per factorisation, 20 at n = 1000), and from the stack below it, more
// than a real-time thread prefaults. This one touches only `lu` and
// `pivot`, sized at set-up, at any n.
struct ShiftedLu::Impl {
  explicit Impl(std::size_t size) : n(size), lu(size * size), pivot(size) {}
  std::size_t n;
  std::vector<double> lu;  // column-major: L below the diagonal (unit), U on and above
  std::vector<std::size_t> pivot;
  double& at(std::size_t i, std::size_t j) noexcept { return lu[i + n * j]; }
};

ShiftedLu::ShiftedLu(std::size_t n) : impl_(std::make_unique<Impl>(n)) {}
ShiftedLu::~ShiftedLu() = default;

bool ShiftedLu::factor(const double* jacobian, double c) noexcept {
  Impl& m = *impl_;
  const std::size_t n = m.n;
  for (std::size_t k = 0; k < n * n; ++k) m.lu[k] = -c * jacobian[k];
  for (std::size_t i = 0; i < n; ++i) m.at(i, i) += 1.0;
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t p = k;
    for (std::size_t i = k + 1; i < n; ++i) {
      if (std::fabs(m.at(i, k)) > std::fabs(m.at(p, k))) p = i;
    }
    m.pivot[k] = p;
    if (p != k) {
      for (std::size_t j = 0; j < n; ++j) std::swap(m.at(k, j), m.at(p, j));
    }
    const double d = m.at(k, k);
    if (!(std::isfinite(d) && d != 0.0)) return false;
    for (std::size_t i = k + 1; i < n; ++i) m.at(i, k) /= d;
    for (std::size_t j = k + 1; j < n; ++j) {
      const double u = m.at(k, j);
      if (u == 0.0) continue;
      double* col = &m.lu[n * j];
      const double* l = &m.lu[n * k];
      for (std::size_t i = k + 1; i < n; ++i) col[i] -= l[i] * u;
    }
  }
  return true;
}

void ShiftedLu::solve(double* b) const noexcept {
  Impl& m = *impl_;
  const std::size_t n = m.n;
  for (std::size_t k = 0; k < n; ++k) {
    if (m.pivot[k] != k) std::swap(b[k], b[m.pivot[k]]);
  }
  for (std::size_t j = 0; j < n; ++j) {  // L y = P b, unit diagonal
    const double y = b[j];
    if (y == 0.0) continue;
    const double* l = &m.lu[n * j];
    for (std::size_t i = j + 1; i < n; ++i) b[i] -= l[i] * y;
  }
  for (std::size_t j = n; j-- > 0;) {  // U x = y
    b[j] /= m.lu[j + n * j];
    const double x = b[j];
    if (x == 0.0) continue;
    const double* u = &m.lu[n * j];
    for (std::size_t i = 0; i < j; ++i) b[i] -= u[i] * x;
  }
}

std::vector<std::complex<double>> eigenvalues(const double* matrix, std::size_t n) {
  const auto size = static_cast<Eigen::Index>(n);
  const Eigen::Map<const Eigen::MatrixXd> a(matrix, size, size);
  Eigen::EigenSolver<Eigen::MatrixXd> solver(a, false);
  std::vector<std::complex<double>> out;
  if (solver.info() != Eigen::Success) return out;
  const auto& values = solver.eigenvalues();
  out.assign(values.data(), values.data() + values.size());
  return out;
}

}  // namespace rtcosim::tasks
