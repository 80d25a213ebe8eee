#include "tools/rtcosim/eval_command.hpp"

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>

#include "base/duration.hpp"
#include "coupling/evaluation.hpp"
#include "coupling/plugin_loader.hpp"
#include "session/report/svg_plot.hpp"
#include "tools/common/cli_args.hpp"

namespace rtcosim::tools {

namespace {

constexpr const char* kEvalHelp = R"(usage: rtcosim eval [options]
       rtcosim eval --table [--format markdown|tsv]

Runs the evaluation protocol of the multi-rate methods paper (section 4): a
slow side samples a test signal every macro step into data blocks (values and
exact derivatives), a fast side reconstructs it with a coupling method every
micro step, and the mean squared error against the true signal over
[0, duration) is printed. The slow side has been running before t = 0.

Signals:  y1 = sin(2πt)   y2 = exp(-1.5t)·cos(3t)   y3 = (4t - t²)/3 for t < 3, else 1

options:
  --signal y1|y2|y3       test signal (default y1)
  --method ID             coupling method (default polynomial); see --list-methods
  --order N               extrapolation order n_E (methods that have one; default 3)
  --interp-order N        interpolation order n (interpolated, ecc; default 3)
  --param NAME=VALUE      any other method parameter; repeatable
  --macro DURATION        slow side's step h_s (default 40ms)
  --micro DURATION        fast side's step h_f (default 1ms)
  --duration DURATION     evaluated span (default 5s)
  --no-derivatives        blocks carry no derivatives (hermite and predictor fall back)
  --jitter FRACTION       tags off the grid by up to +-FRACTION/2 macro steps, so the
                          spacing varies within h_s (1 +- FRACTION); 0 to 0.99 (default 0);
                          with --table too
  --plot FILE.svg         draw the true signal, the method's output and its error,
                          with the coupling times marked
  --table                 the whole grid: variants A1 (h_s 40 ms, n_E 3), A2 (40 ms, 4),
                          A3 (75 ms, 3) x signals x methods
  --format markdown|tsv   table format (default markdown)
  --list-methods          the coupling methods and their parameters
  --plugins DIR           load coupling-method plugins (*.so) from DIR; repeatable
  -h, --help              this text

Durations take a unit: ns, us, ms, s, min, h ("40ms", "0.075s").

examples:
  rtcosim eval --signal y3 --method ecc --order 3
  rtcosim eval --signal y1 --method smoothed --macro 75ms --plot smoothed.svg
  rtcosim eval --table --format tsv
)";

std::string format_mse(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string describe_params(const coupling::ParamSettings& params) {
  std::string out;
  for (const auto& p : params) out += (out.empty() ? "" : ", ") + p.name + "=" + p.value;
  return out.empty() ? "" : " (" + out + ")";
}

void list_methods(const coupling::MethodRegistry& registry) {
  for (const auto& m : registry.methods()) {
    std::cout << m.id << (m.uses_derivatives ? "  [uses derivatives]" : "") << "\n    " << m.summary << '\n';
    for (const auto& p : m.params) {
      std::cout << "    " << p.name << ": " << coupling::describe_range(p) << ", default "
                << (p.kind == coupling::ParamKind::kDuration ? base::format_duration(p.default_value)
                                                             : format_mse(p.default_value))
                << " — " << p.description << '\n';
    }
    if (m.origin != "built-in") std::cout << "    from " << m.origin << '\n';
  }
}

void write_eval_plot(const coupling::EvalSettings& settings, const coupling::EvalResult& result,
                     const std::string& path) {
  const auto& signal = coupling::test_signal(settings.signal);
  plot::Figure figure;
  figure.title = "rtcosim eval: " + settings.signal + " = " + signal.formula + ", " + settings.method +
                 describe_params(settings.params) + ", h_s " + base::format_duration(settings.macro_step) + ", MSE " +
                 format_mse(result.mse);
  figure.x_label = "simulation time (s)";
  plot::Panel values;
  values.y_label = "value";
  values.series.push_back({"true " + settings.signal, result.time, result.truth, "#1f77b4", 2.0, false, false});
  values.series.push_back({settings.method, result.time, result.output, "#d62728", 1.3, false, false});
  values.markers = result.coupling_times;
  values.marker_label = "coupling times (blocks)";
  plot::Panel error;
  error.y_label = "output − true";
  std::vector<double> diff(result.time.size());
  for (std::size_t i = 0; i < diff.size(); ++i) diff[i] = result.output[i] - result.truth[i];
  error.series.push_back({"error", result.time, diff, "#2ca02c", 1.0, false, false});
  error.markers = result.coupling_times;
  figure.panels = {values, error};
  std::string why;
  if (!plot::write_svg(figure, path, &why)) throw std::runtime_error(why);
}

}  // namespace

std::string eval_table(const coupling::MethodRegistry& registry, TableFormat format, double jitter) {
  const auto& methods = coupling::eval_table_methods();
  std::ostringstream out;
  if (format == TableFormat::kTsv) {
    out << "variant\tsignal";
    for (const auto& m : methods) out << '\t' << m;
    out << '\n';
  } else {
    out << "| variant | signal |";
    for (const auto& m : methods) out << ' ' << m << " |";
    out << "\n|---|---|";
    for (std::size_t i = 0; i < methods.size(); ++i) out << "---:|";
    out << '\n';
  }
  for (const auto& variant : coupling::eval_variants()) {
    for (const auto& signal : coupling::test_signals()) {
      out << (format == TableFormat::kTsv ? "" : "| ") << variant.id << (format == TableFormat::kTsv ? "\t" : " | ")
          << signal.id << (format == TableFormat::kTsv ? "" : " |");
      for (const auto& m : methods) {
        coupling::EvalSettings settings;
        settings.signal = signal.id;
        settings.method = m;
        settings.macro_step = variant.macro_step;
        settings.params = coupling::variant_params(registry, m, variant);
        settings.jitter = jitter;
        const double mse = coupling::run_evaluation(registry, settings).mse;
        if (format == TableFormat::kTsv) {
          out << '\t' << format_mse(mse);
        } else {
          out << ' ' << format_mse(mse) << " |";
        }
      }
      out << '\n';
    }
  }
  return out.str();
}

namespace {

// --jitter is shared by the table and the single run, so it is read first.
double parse_jitter(const CliArgs& args) {
  double jitter = 0.0;
  if (const auto v = args.value("jitter")) {
    char* end = nullptr;
    jitter = std::strtod(v->c_str(), &end);
    if (end == v->c_str() || *end != '\0' || !(jitter >= 0.0 && jitter < 1.0)) {
      throw UsageError("--jitter: '" + *v + "' — expected a fraction of the macro step from 0 to 0.99, e.g. 0.2");
    }
  }
  return jitter;
}

// The grid fixes every per-run option: one given with --table is refused
// rather than silently ignored.
void print_table(const CliArgs& args, const coupling::MethodRegistry& registry, const std::string& format_name,
                 double jitter) {
  for (const char* single : {"signal", "method", "order", "interp-order", "param", "plot"}) {
    if (args.value(single)) {
      throw UsageError(std::string("--") + single + " does not apply to --table (the grid fixes it)");
    }
  }
  if (format_name == "markdown") {
    std::cout << "MSE of each coupling method (h_f = 1 ms, t in [0, 5 s); A1: h_s 40 ms, n_E 3; "
                 "A2: h_s 40 ms, n_E 4; A3: h_s 75 ms, n_E 3"
              << (jitter > 0.0 ? "; tag jitter +-" + format_mse(jitter / 2.0) + " h_s" : std::string()) << ")\n\n";
  }
  std::cout << eval_table(registry, format_name == "tsv" ? TableFormat::kTsv : TableFormat::kMarkdown, jitter);
}

// One run's settings, every option checked (the signal too) before any
// evaluation starts.
coupling::EvalSettings single_settings(const CliArgs& args, double jitter) {
  coupling::EvalSettings settings;
  settings.signal = args.value("signal").value_or("y1");
  settings.method = args.value("method").value_or("polynomial");
  settings.macro_step = args.positive_duration("macro", 0.040);
  settings.micro_step = args.positive_duration("micro", 0.001);
  settings.duration = args.positive_duration("duration", 5.0);
  settings.with_derivatives = !args.flag("no-derivatives");
  settings.jitter = jitter;
  if (const auto v = args.value("order")) settings.params.push_back({"order", *v});
  if (const auto v = args.value("interp-order")) settings.params.push_back({"interp_order", *v});
  for (const auto& p : args.values("param")) {
    const auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageError("--param: expected NAME=VALUE, got '" + p + "'");
    settings.params.push_back({p.substr(0, eq), p.substr(eq + 1)});
  }
  settings.keep_trace = args.value("plot").has_value();
  (void)coupling::test_signal(settings.signal);
  return settings;
}

// The method's MSE next to zoh's on the same signal and steps: the ratio
// is what says whether the coupling method is worth it.
void print_single(const coupling::MethodRegistry& registry, const coupling::EvalSettings& settings, double jitter,
                  const std::optional<std::string>& plot_path) {
  const auto result = coupling::run_evaluation(registry, settings);
  coupling::EvalSettings baseline = settings;
  baseline.method = "zoh";
  baseline.params.clear();
  baseline.keep_trace = false;
  const double zoh_mse = coupling::run_evaluation(registry, baseline).mse;

  std::cout << settings.signal << " = " << coupling::test_signal(settings.signal).formula << ", method "
            << settings.method << describe_params(settings.params) << ", h_s "
            << base::format_duration(settings.macro_step) << ", h_f " << base::format_duration(settings.micro_step)
            << ", over " << base::format_duration(settings.duration)
            << (jitter > 0.0 ? ", tag jitter +-" + format_mse(jitter / 2.0) + " h_s" : std::string()) << '\n'
            << "MSE " << format_mse(result.mse) << " over " << result.steps << " micro steps";
  if (settings.method != "zoh" && zoh_mse > 0.0) {
    std::cout << " (zoh: " << format_mse(zoh_mse) << ", ratio " << format_mse(result.mse / zoh_mse) << ")";
  }
  std::cout << '\n';
  if (result.derivative_fallback) {
    std::cout << "note: " << settings.method
              << " wanted derivatives the blocks did not carry; it used its derivative-free variant\n";
  }
  if (plot_path) {
    write_eval_plot(settings, result, *plot_path);
    std::cout << "plot written to " << *plot_path << '\n';
  }
}

}  // namespace

int run_eval_command(const std::vector<std::string>& raw_args) {
  try {
    CliArgs args("eval",
                 {"signal", "method", "order", "interp-order", "param", "macro", "micro", "duration", "plot", "format",
                  "plugins", "jitter"},
                 {"table", "no-derivatives", "list-methods", "help"}, {"param", "plugins"});
    args.parse(raw_args);
    std::vector<coupling::PluginDiagnostic> plugin_problems;
    const auto registry = coupling::registry_with_plugins(args.values("plugins"), &plugin_problems);
    for (const auto& d : plugin_problems) {
      if (!d.ok) std::cerr << "warning: " << d.path << ": " << d.message << '\n';
    }
    if (!args.positionals().empty()) throw UsageError("unexpected argument '" + args.positionals().front() + "'");
    if (args.flag("help")) {
      std::cout << kEvalHelp;
      return 0;
    }
    if (args.flag("list-methods")) {
      list_methods(registry);
      return 0;
    }
    const double jitter = parse_jitter(args);
    const std::string format_name = args.value("format").value_or("markdown");
    if (format_name != "markdown" && format_name != "tsv") {
      throw UsageError("--format: '" + format_name + "' is not a table format — expected markdown or tsv");
    }
    if (args.flag("table")) {
      print_table(args, registry, format_name, jitter);
      return 0;
    }
    if (args.value("format")) throw UsageError("--format applies to --table only");
    const coupling::EvalSettings settings = single_settings(args, jitter);
    print_single(registry, settings, jitter, args.value("plot"));
    return 0;
  } catch (const UsageError& e) {
    std::cerr << "rtcosim eval: " << e.what() << "\nsee 'rtcosim eval --help'\n";
    return 2;
  } catch (const coupling::CouplingError& e) {
    std::cerr << "rtcosim eval: " << e.what() << '\n';
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "rtcosim eval: " << e.what() << '\n';
    return 1;
  }
}

}  // namespace rtcosim::tools
