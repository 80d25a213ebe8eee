#pragma once

#include <array>

#include <Eigen/Dense>

#include "tasks/block.hpp"
#include "tasks/params.hpp"

namespace rtcosim::tasks {

/*
 * StateSpace: x' = A x + B u, y = C x + D u, with Eigen matrices fixed at
 * construction. The base of every linear continuous block (state_space,
 * transfer_function, first_order_lag, second_order). Output derivatives are
 * exact: y' = C x' + D u', known when D is zero or u' is known.
 * RT-safe: evaluation uses Eigen maps over the partition's memory and
 * fixed-size products; nothing allocates.
 */
class StateSpace final : public Block {
 public:
  StateSpace(const std::string& name, const std::string& type, Eigen::MatrixXd a, Eigen::MatrixXd b, Eigen::MatrixXd c,
             Eigen::MatrixXd d, Eigen::VectorXd x0);

  void initialize(std::span<double> x, std::span<double> xd) const noexcept override;
  void output(const BlockContext& c) const noexcept override;
  void derivatives(const BlockContext& c, std::span<double> dx) const noexcept override;
  void output_derivatives(const BlockContext& c, std::span<const double> dx) const noexcept override;

  [[nodiscard]] const Eigen::MatrixXd& a() const noexcept { return a_; }
  [[nodiscard]] const Eigen::MatrixXd& b() const noexcept { return b_; }
  [[nodiscard]] const Eigen::MatrixXd& c() const noexcept { return c_; }
  [[nodiscard]] const Eigen::MatrixXd& d() const noexcept { return d_; }
  // D is not zero: the output reads the input (and y' the input's derivative).
  [[nodiscard]] bool has_d() const noexcept { return has_d_; }
  const KernelFamily* kernel_family() const noexcept override;

 private:
  Eigen::MatrixXd a_, b_, c_, d_;
  Eigen::VectorXd x0_;
  bool has_d_ = false;
  // A single-state, single-input, single-output system (first_order_lag):
  // its coefficients in the block itself, no matrix to chase.
  bool scalar_ = false;
  std::array<double, 4> abcd_{};  // a, b, c, d
};

// Controllable canonical form of num(s)/den(s), coefficients in descending
// powers of s; BlockError unless the transfer function is proper.
void transfer_function_to_state_space(const std::string& block, const Vector& num, const Vector& den,
                                      Eigen::MatrixXd& a, Eigen::MatrixXd& b, Eigen::MatrixXd& c, Eigen::MatrixXd& d);

}  // namespace rtcosim::tasks
