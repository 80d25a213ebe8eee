#include "tasks/linear_solver.hpp"

#include <cmath>

#include <Eigen/Dense>

namespace rtcosim::tasks {

struct ShiftedLu::Impl {
  explicit Impl(std::size_t size) : n(static_cast<Eigen::Index>(size)), w(n, n), lu(n), work(n) {}
  Eigen::Index n;
  Eigen::MatrixXd w;
  Eigen::PartialPivLU<Eigen::MatrixXd> lu;
  Eigen::VectorXd work;
};

ShiftedLu::ShiftedLu(std::size_t n) : impl_(std::make_unique<Impl>(n)) {}
ShiftedLu::~ShiftedLu() = default;

bool ShiftedLu::factor(const double* jacobian, double c) noexcept {
  Impl& m = *impl_;
  const Eigen::Map<const Eigen::MatrixXd> j(jacobian, m.n, m.n);
  m.w.noalias() = -c * j;
  m.w.diagonal().array() += 1.0;
  m.lu.compute(m.w);
  const auto& u = m.lu.matrixLU();
  for (Eigen::Index i = 0; i < m.n; ++i) {
    const double p = u(i, i);
    if (!(std::isfinite(p) && p != 0.0)) return false;
  }
  return true;
}

void ShiftedLu::solve(double* b) const noexcept {
  Impl& m = *impl_;
  Eigen::Map<Eigen::VectorXd> v(b, m.n);
  m.work.noalias() = m.lu.solve(v);
  v = m.work;
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
