#include "rt_config/delay_model.hpp"

#include <array>
#include <cmath>
#include <span>

#include <gtest/gtest.h>

namespace rtcosim::config {
namespace {

TEST(DelayModel, UniformIsEqualMassesAtCellCentresWithModeAtItsRightEnd) {
  const auto u = DelayDensity::uniform(0.004, 0.001);
  ASSERT_EQ(u.masses().size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(u.masses()[i], 0.25);
    EXPECT_DOUBLE_EQ(u.position(i), 0.0005 + 0.001 * static_cast<double>(i));
  }
  EXPECT_DOUBLE_EQ(u.mean(), 0.002);
  EXPECT_DOUBLE_EQ(u.rightmost_mode(), 0.004);
}

TEST(DelayModel, DiracModeIsItsPosition) {
  const auto d = DelayDensity::dirac(0.0085, 0.001);
  EXPECT_DOUBLE_EQ(d.rightmost_mode(), 0.0085);
  EXPECT_DOUBLE_EQ(d.total_mass(), 1.0);
}

// U(0, 3 ms) * U(0, 5 ms) is the trapezoid rising as t / (3 ms * 5 ms) up to
// 3 ms, flat at 1 / 5 ms up to 5 ms, falling to 0 at 8 ms. Sampled at 1 ms
// nodes and times dt: 1/15, 2/15, 3/15, 3/15, 3/15, 2/15, 1/15 at 1..7 ms.
TEST(DelayModel, ConvolutionOfTwoUniformsIsTheExactTrapezoid) {
  const double dt = 0.001;
  const auto t = DelayDensity::uniform(0.003, dt).convolve(DelayDensity::uniform(0.005, dt));
  const std::array<double, 7> expected{1, 2, 3, 3, 3, 2, 1};
  ASSERT_EQ(t.masses().size(), expected.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    EXPECT_NEAR(t.masses()[k], expected[k] / 15.0, 1e-15) << k;
    EXPECT_NEAR(t.position(k), 0.001 * static_cast<double>(k + 1), 1e-15) << k;
    const double time = t.position(k);
    const double density = std::min({time / (0.003 * 0.005), 1.0 / 0.005, (0.008 - time) / (0.003 * 0.005)});
    EXPECT_NEAR(t.masses()[k], density * dt, 1e-12) << k;
  }
  EXPECT_NEAR(t.rightmost_mode(), 0.005, 1e-15);  // right end of the plateau, no jump there
  EXPECT_NEAR(t.mean(), 0.004, 1e-15);
  EXPECT_NEAR(t.total_mass(), 1.0, 1e-15);
}

TEST(DelayModel, HopsFollowEquation416) {
  const DelayElement a{"a", 0.002, 0.010};
  const DelayElement b{"b", 0.003, 0.004};
  const auto sync = hop_density({a, b, HopKind::synchronous}, 0.001);
  EXPECT_DOUBLE_EQ(sync.rightmost_mode(), 0.005);  // tau_a + tau_b
  const auto async = hop_density({a, b, HopKind::asynchronous}, 0.001);
  EXPECT_DOUBLE_EQ(async.rightmost_mode(), 0.004);  // theta of the target
  EXPECT_EQ(async.masses().size(), 4u);
}

// Table 5.16 (upper-case T the dead time, lower-case t the cycle time):
// R 0.1 ms/32 ms, C 0/8 ms, P 10 ms/0.1 ms, M 4/4 ms, S 4/4 ms. The plant is
// coupled synchronously to the communication both ways: delta(10 ms) twice,
// mode 20 ms; the data acquisition waits U(0, 4 ms) for the command and
// hands it synchronously to the simulation, delta(8 ms): U on [8, 12] ms,
// rightmost mode 12 ms. Delta_o = 8 ms, the thesis's value.
TEST(DelayModel, Table516GivesTheThesisOutputDelay) {
  const DelayElement c{"C", 0.0, 0.008};
  const DelayElement p{"P", 0.010, 0.0001};
  const DelayElement m{"M", 0.004, 0.004};
  const DelayElement s{"S", 0.004, 0.004};
  const std::array<Hop, 2> measurement{Hop{c, p, HopKind::synchronous}, Hop{p, c, HopKind::synchronous}};
  const std::array<Hop, 2> simulation{Hop{c, m, HopKind::asynchronous}, Hop{m, s, HopKind::synchronous}};
  for (double dt : {0.0001, 0.00005}) {
    const auto delay = output_delay(measurement, simulation, dt);
    EXPECT_NEAR(delay.measurement_mode, 0.020, 1e-12);
    EXPECT_NEAR(delay.simulation_mode, 0.012, 1e-12);
    EXPECT_NEAR(delay.delta_o, 0.008, 1e-12);
  }
  // Eq. 4.14 for the same timing: u reaches the plant after 10 ms, the
  // simulation after at most 12 ms.
  const std::array<Hop, 1> to_plant{Hop{c, p, HopKind::synchronous}};
  EXPECT_NEAR(input_delay(to_plant, simulation, 0.0001), -0.002, 1e-12);
}

// Eq. 4.15 as printed: the simulation's output is available after
// (alpha^n_CM * alpha_MS * alpha_SS)(t), n = T_D. With table 5.16 read as
// above, alpha_SS = delta(tau_S + tau_S) = delta(8 ms) moves the simulation
// path's rightmost mode to 20 ms: Delta_o = 0 for n = 1 and 2 (U * U is a
// triangle peaking at 4 ms), -2 ms for n = 3 (the peak of three uniforms,
// 6 ms, to half a grid cell).
TEST(DelayModel, Equation415AsPrintedGivesNoOutputDelayForTable516) {
  const DelayElement c{"C", 0.0, 0.008};
  const DelayElement p{"P", 0.010, 0.0001};
  const DelayElement m{"M", 0.004, 0.004};
  const DelayElement s{"S", 0.004, 0.004};
  const std::array<Hop, 2> measurement{Hop{c, p, HopKind::synchronous}, Hop{p, c, HopKind::synchronous}};
  const double expected[] = {0.0, 0.0, -0.002};
  for (int n = 1; n <= 3; ++n) {
    const std::array<Hop, 3> simulation{Hop{c, m, HopKind::asynchronous, n}, Hop{m, s, HopKind::synchronous},
                                        Hop{s, s, HopKind::synchronous}};
    const auto delay = output_delay(measurement, simulation, 0.0001);
    // Three uniforms put their cell masses at odd multiples of dt/2 with two
    // equal peaks; the continuous density they describe peaks at 6 ms between
    // them, and that is the mode taken.
    EXPECT_NEAR(delay.delta_o, expected[n - 1], 1e-12) << "n = " << n;
    EXPECT_NEAR(delay.simulation.mean(), 0.016 + n * 0.002, 1e-12) << "n = " << n;
  }
}

// Every choice table 4.4 leaves open (R/C -> P and P -> C synchronous or
// not; C -> M is asynchronous, M -> S and S -> S synchronous), under both
// readings of table 5.16's upper- and lower-case columns (T the dead time
// and t the cycle, or the reverse), in docs/sync.md's row order: `row` gets
// each reading's measurement path and eq. 4.15's printed simulation path.
struct Reading {
  bool upper_is_dead_time;
  HopKind cp, pc;
};
template <typename Row>
void for_each_reading(Row row) {
  struct Column {
    double upper, lower;
  };
  const Column c{0.0, 0.008}, p{0.010, 0.0001}, m{0.004, 0.004}, s{0.004, 0.004};
  for (const bool upper_is_dead_time : {true, false}) {
    auto element = [&](const char* name, Column r) {
      return upper_is_dead_time ? DelayElement{name, r.upper, r.lower} : DelayElement{name, r.lower, r.upper};
    };
    const auto C = element("C", c), P = element("P", p), M = element("M", m), S = element("S", s);
    for (const auto cp : {HopKind::synchronous, HopKind::asynchronous}) {
      for (const auto pc : {HopKind::synchronous, HopKind::asynchronous}) {
        const std::array<Hop, 2> measurement{Hop{C, P, cp}, Hop{P, C, pc}};
        const std::array<Hop, 3> printed{Hop{C, M, HopKind::asynchronous}, Hop{M, S, HopKind::synchronous},
                                         Hop{S, S, HopKind::synchronous}};
        row(Reading{upper_is_dead_time, cp, pc}, measurement, printed);
      }
    }
  }
}

// With n = T_D = 1: as printed, eq. 4.15 never gives the thesis's +8 ms;
// without alpha_SS it gives it once, for the reading and the choice
// docs/sync.md uses.
TEST(DelayModel, OnlyLeavingOutAlphaSSGivesTheThesisEightMilliseconds) {
  int printed_eight = 0, without_ss_eight = 0;
  for_each_reading([&](const Reading& r, std::span<const Hop> measurement, std::span<const Hop> printed) {
    const double with_ss = output_delay(measurement, printed, 0.00005).delta_o;
    const double without_ss = output_delay(measurement, printed.first(2), 0.00005).delta_o;
    printed_eight += std::abs(with_ss - 0.008) < 1e-9 ? 1 : 0;
    if (std::abs(without_ss - 0.008) < 1e-9) {
      ++without_ss_eight;
      EXPECT_TRUE(r.upper_is_dead_time && r.cp == HopKind::synchronous && r.pc == HopKind::synchronous);
    }
  });
  EXPECT_EQ(printed_eight, 0);
  EXPECT_EQ(without_ss_eight, 1);
}

TEST(DelayModel, OffGridTimesAreRefusedWithTheValueAndTheGrid) {
  try {
    (void)DelayDensity::uniform(0.0035, 0.001);
    FAIL() << "no error";
  } catch (const DelayModelError& e) {
    EXPECT_NE(std::string(e.what()).find("0.0035"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("grid step 0.001"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)DelayDensity::dirac(-0.001, 0.001), DelayModelError);
  EXPECT_THROW((void)DelayDensity::uniform(0.004, 0.001).convolve(DelayDensity::uniform(0.004, 0.002)),
               DelayModelError);
}

// The fuzzer's find: a dead time of 1e36 s on a 1 ms grid was cast to long (undefined) and would have asked for
// that many cells. The loader must answer in bounded time and memory, naming the grid.
TEST(DelayModel, GridsTooFineForTheTimesAreRefusedBeforeTheyCostMemoryOrTime) {
  try {
    (void)DelayDensity::dirac(8.88889e36, 0.001);
    FAIL() << "no error";
  } catch (const DelayModelError& e) {
    EXPECT_NE(std::string(e.what()).find("coarser 'sync.delay.grid'"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)DelayDensity::uniform(10.0, 1e-9), DelayModelError);
  EXPECT_NO_THROW((void)DelayDensity::uniform(1.0, 1e-6));  // 1e6 cells: still allowed

  // 1000 repeats of a 1000-cell uniform: ~5e11 multiply-adds, refused at once rather than run for hours.
  const DelayElement a{"a", 0.0, 1.0};
  const DelayElement b{"b", 0.0, 1.0};
  const std::array<Hop, 1> path{Hop{a, b, HopKind::asynchronous, 1000}};
  try {
    (void)output_delay(path, path, 0.001);
    FAIL() << "no error";
  } catch (const DelayModelError& e) {
    EXPECT_NE(std::string(e.what()).find("alpha^1000_ab"), std::string::npos) << e.what();
  }
  // A modest chain still composes: 20 repeats of 4 cells stays exact (mode of the sum of 20 uniforms on [0,4]).
  const DelayElement c{"c", 0.0, 0.004};
  const std::array<Hop, 1> small{Hop{a, c, HopKind::asynchronous, 20}};
  EXPECT_NEAR(path_density(small, 0.001).total_mass(), 1.0, 1e-12);
}

// A uniform one grid cell wide is a plateau like any other: its continuous
// density is flat up to theta, so its rightmost mode is theta, not the cell's
// centre. And a uniform convolved with one a cell wide is a trapezoid whose
// flat top ends at the wider one's theta (the masses end in a step of one
// cell, which is no jump of the density).
TEST(DelayModel, AUniformOneCellWideHasItsModeAtItsRightEnd) {
  EXPECT_DOUBLE_EQ(DelayDensity::uniform(0.001, 0.001).rightmost_mode(), 0.001);
  const auto u = DelayDensity::uniform(0.0001, 0.0001).convolve(DelayDensity::dirac(0.010, 0.0001));
  EXPECT_DOUBLE_EQ(u.rightmost_mode(), 0.0101);
  const auto trapezoid = DelayDensity::uniform(0.004, 0.001).convolve(DelayDensity::uniform(0.001, 0.001));
  EXPECT_DOUBLE_EQ(trapezoid.rightmost_mode(), 0.004);
  // Its density: rises over the first cell, flat at 1/theta to theta, falls.
  EXPECT_NEAR(trapezoid.density_at(DelayDensity::kTicksPerCell / 2), 125.0, 1e-9);  // 0.5 ms: 0.5 x 250
  EXPECT_NEAR(trapezoid.density_at(2 * DelayDensity::kTicksPerCell), 250.0, 1e-9);
  EXPECT_NEAR(trapezoid.density_at(4 * DelayDensity::kTicksPerCell + DelayDensity::kTicksPerCell / 4), 187.5, 1e-9);
}

// The sum of three U(0, theta) (Irwin-Hall, scaled): density x^2/2 on [0, 1],
// (-2x^2 + 6x - 3)/2 on [1, 2], (3 - x)^2/2 on [2, 3] in units of theta, per
// theta; its mode 1.5 theta for an even and an odd number of cells.
TEST(DelayModel, ThreeUniformsGiveTheIrwinHallDensityAndItsMode) {
  for (const double dt : {0.001, 0.0005, 0.0004}) {  // theta = 4, 8 and 10 cells
    const double theta = 0.004;
    const auto one = DelayDensity::uniform(theta, dt);
    const auto three = one.convolve(one).convolve(one);
    EXPECT_EQ(three.order(), 3);
    EXPECT_NEAR(three.rightmost_mode(), 1.5 * theta, 1e-15) << "dt " << dt;
    auto irwin_hall = [](double x) {
      return x < 1.0 ? x * x / 2.0 : x < 2.0 ? (-2.0 * x * x + 6.0 * x - 3.0) / 2.0 : (3.0 - x) * (3.0 - x) / 2.0;
    };
    const long ticks_per_theta = static_cast<long>(std::lround(theta / dt)) * DelayDensity::kTicksPerCell;
    for (long x = 1; x < 3 * ticks_per_theta; x += 37) {
      EXPECT_NEAR(three.density_at(x) * theta,
                  irwin_hall(static_cast<double>(x) / static_cast<double>(ticks_per_theta)), 1e-12)
          << "dt " << dt << ", x " << x;
    }
  }
}

// docs/sync.md's table of every choice table 4.4 leaves open, under both
// readings of table 5.16: the same modes and Delta_o on the 0.1 ms grid (where
// the plant's 0.1 ms cycle is one cell) as on the 50 us grid, equal to the
// continuous values to the bit of the tick count (equal modes give 0, not a
// rounding residue).
TEST(DelayModel, TheDocumentedTableHoldsOnEitherGrid) {
  // measurement mode, Delta_o with alpha_SS, without (ms), in the docs' order.
  const double expected[8][3] = {{20, 0, 8},        {18, -2, 6},        {10.1, -9.9, -1.9}, {8, -12, -4},
                                 {16.2, -3.8, 4.2}, {8.1, -11.9, -3.9}, {18.1, -1.9, 6.1},  {10, -10, -2}};
  for (const double dt : {0.0001, 0.00005}) {
    int row = 0;
    for_each_reading([&](const Reading&, std::span<const Hop> measurement, std::span<const Hop> printed) {
      const auto with_ss = output_delay(measurement, printed, dt);
      const auto without_ss = output_delay(measurement, printed.first(2), dt);
      EXPECT_NEAR(with_ss.measurement_mode * 1e3, expected[row][0], 1e-9) << "dt " << dt << ", row " << row;
      EXPECT_NEAR(with_ss.delta_o * 1e3, expected[row][1], 1e-9) << "dt " << dt << ", row " << row;
      EXPECT_NEAR(without_ss.delta_o * 1e3, expected[row][2], 1e-9) << "dt " << dt << ", row " << row;
      if (expected[row][1] == 0.0) {
        EXPECT_EQ(with_ss.delta_o, 0.0) << "dt " << dt << ", row " << row;
      }
      ++row;
    });
    EXPECT_EQ(row, 8);
  }
}

// Uniforms beyond a path's order bound are refused before their modes cost
// order^3 per point (a one-cell uniform costs no convolution work).
TEST(DelayModel, APathOfTooManyAsynchronousHopsIsRefused) {
  const DelayElement a{"a", 0.0, 0.001};
  const DelayElement b{"b", 0.0, 0.001};
  const std::array<Hop, 1> path{Hop{a, b, HopKind::asynchronous, 1000}};
  try {
    (void)path_density(path, 0.001);
    FAIL() << "no error";
  } catch (const DelayModelError& e) {
    EXPECT_NE(std::string(e.what()).find("alpha^1000_ab"), std::string::npos) << e.what();
  }
  const std::array<Hop, 1> twenty{Hop{a, b, HopKind::asynchronous, 20}};
  EXPECT_NEAR(path_density(twenty, 0.001).rightmost_mode(), 0.010, 1e-15);  // 20 x U(0, 1 ms): 10 ms
}

}  // namespace
}  // namespace rtcosim::config
