// A model of one's own, run by weft: plain std::vector, no Eigen, only the `weft::weft` target.
//
// Each pipeline stage is one layer y = tanh(w ⊙ x) over `width` features; a micro-batch's loss
// is ½‖y − target‖² after the last stage. The model gives weft one kernel per (kind, phase) the
// schedules use — a block's forward, its whole backward, and its backward split into dX and dW
// (ZB-H1 runs those apart) — and says which data each pipeline transfer carries; weft lowers
// each schedule to a stream program, posts the transfers between ranks and runs everything on
// its worker threads. The gradients are compared with the model's own serial loop, bit for bit.
#include <weft/runtime.hpp>
#include <weft/weft.hpp>

#include <cmath>
#include <cstdio>
#include <span>
#include <vector>

namespace {

using vec = std::vector<float>;

// The model: weights per stage, inputs and targets per micro-batch, all seeded.
struct toy_model {
  int stages, width, micro;
  std::vector<vec> w, inputs, targets;

  toy_model(int stages_, int width_, int micro_) : stages(stages_), width(width_), micro(micro_) {
    unsigned state = 12345;
    const auto next = [&state] {  // a small LCG: the same numbers on every platform
      state = state * 1103515245u + 12345u;
      return static_cast<float>((state >> 8) % 2001) / 1000.0f - 1.0f;
    };
    for (auto* v : {&w, &inputs, &targets})
      for (int i = 0; i < (v == &w ? stages : micro); ++i) {
        v->emplace_back(static_cast<std::size_t>(width));
        for (float& x : v->back()) x = next();
      }
  }

  // The serial reference: every micro-batch through every stage, gradients summed in
  // micro-batch order.
  std::vector<vec> serial_grads() const {
    std::vector<vec> grad(static_cast<std::size_t>(stages), vec(static_cast<std::size_t>(width)));
    for (int mb = 0; mb < micro; ++mb) {
      std::vector<vec> x{inputs[static_cast<std::size_t>(mb)]};
      for (int s = 0; s < stages; ++s) x.push_back(layer(s, x.back()));
      vec dy = x.back();
      for (int i = 0; i < width; ++i) dy[static_cast<std::size_t>(i)] -= target(mb, i);
      for (int s = stages; s-- > 0;) {
        const vec g = local_grad(dy, x[static_cast<std::size_t>(s) + 1]);
        add_weight_grad(grad[static_cast<std::size_t>(s)], g, x[static_cast<std::size_t>(s)]);
        dy = input_grad(s, g);
      }
    }
    return grad;
  }

  vec layer(int s, const vec& x) const {
    vec y(x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
      y[i] = std::tanh(w[static_cast<std::size_t>(s)][i] * x[i]);
    return y;
  }
  static vec local_grad(const vec& dy, const vec& y) {  // dL/d(w ⊙ x)
    vec g(dy.size());
    for (std::size_t i = 0; i < dy.size(); ++i) g[i] = dy[i] * (1 - y[i] * y[i]);
    return g;
  }
  vec input_grad(int s, const vec& g) const {
    vec dx(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) dx[i] = g[i] * w[static_cast<std::size_t>(s)][i];
    return dx;
  }
  static void add_weight_grad(vec& into, const vec& g, const vec& x) {
    for (std::size_t i = 0; i < g.size(); ++i) into[i] += g[i] * x[i];
  }
  float target(int mb, int i) const {
    return targets[static_cast<std::size_t>(mb)][static_cast<std::size_t>(i)];
  }
};

// One step of the model under a schedule: what weft calls. State per (micro-batch, chunk); a
// chunk is a stage here (none of these schedules carries the model twice).
class toy_step {
 public:
  toy_step(const toy_model& m, const weft::model_desc& d) : m_(m), d_(d) {
    units_.resize(static_cast<std::size_t>(d.micro * d.chunks()));
  }

  // Compute kernels: whole-block forward, backward, and the backward's two halves.
  void operator()(weft::kinds::block, weft::phases::forward, weft::exec::run_call& c) {
    unit& u = at(c.op);
    u.x = input_of(c.op);
    u.y = m_.layer(c.op.chunk, u.x);
  }
  void operator()(weft::kinds::block, weft::phases::backward, weft::exec::run_call& c) {
    backward_dx(c.op);
    backward_dw(c.op);
  }
  void operator()(weft::kinds::block, weft::phases::backward_dx, weft::exec::run_call& c) {
    backward_dx(c.op);
  }
  void operator()(weft::kinds::block, weft::phases::backward_dw, weft::exec::run_call& c) {
    backward_dw(c.op);
  }

  // Transfers, routed by weft: a send F carries the chunk's output, a send B its input
  // gradient; a receive lands in the receiving chunk's buffer.
  std::span<const float> outgoing(const weft::exec::run_call& c) {
    const unit& u = at(c.op);
    return c.op.ph == weft::phase::F ? u.y : u.dx;
  }
  std::span<float> incoming(const weft::exec::run_call& c) {
    unit& u = at(c.op);
    vec& into = c.op.ph == weft::phase::F ? u.received_x : u.received_dy;
    into.assign(static_cast<std::size_t>(m_.width), 0.0f);
    return into;
  }

  // After the run: each stage's gradient summed in micro-batch order, as the serial loop does.
  std::vector<vec> grads() const {
    std::vector<vec> grad(static_cast<std::size_t>(m_.stages),
                          vec(static_cast<std::size_t>(m_.width)));
    for (int mb = 0; mb < d_.micro; ++mb)
      for (int c = 0; c < d_.chunks(); ++c) {
        const unit& u = units_[index(mb, c)];
        for (std::size_t i = 0; i < u.dw.size(); ++i)
          grad[static_cast<std::size_t>(c)][i] += u.dw[i];
      }
    return grad;
  }

 private:
  struct unit {
    vec x, y, g, dx, dw, received_x, received_dy;
  };
  std::size_t index(int mb, int chunk) const {
    return static_cast<std::size_t>(mb * d_.chunks() + chunk);
  }
  unit& at(const weft::op& o) { return units_[index(o.mb, o.chunk)]; }

  // A chunk's input: the micro-batch's for the first, else the chunk before's output — received
  // when that one sits on another rank.
  vec input_of(const weft::op& o) {
    if (o.chunk == 0) return m_.inputs[static_cast<std::size_t>(o.mb)];
    if (d_.rank_of(o.chunk - 1) != d_.rank_of(o.chunk)) return at(o).received_x;
    return units_[index(o.mb, o.chunk - 1)].y;
  }
  vec output_grad_of(const weft::op& o) {
    unit& u = at(o);
    if (o.chunk == d_.chunks() - 1) {
      vec dy = u.y;
      for (int i = 0; i < m_.width; ++i) dy[static_cast<std::size_t>(i)] -= m_.target(o.mb, i);
      return dy;
    }
    if (d_.rank_of(o.chunk + 1) != d_.rank_of(o.chunk)) return u.received_dy;
    return units_[index(o.mb, o.chunk + 1)].dx;
  }
  void backward_dx(const weft::op& o) {
    unit& u = at(o);
    u.g = toy_model::local_grad(output_grad_of(o), u.y);
    u.dx = m_.input_grad(o.chunk, u.g);
  }
  void backward_dw(const weft::op& o) {
    unit& u = at(o);
    u.dw.assign(static_cast<std::size_t>(m_.width), 0.0f);
    toy_model::add_weight_grad(u.dw, u.g, u.x);
  }

  const toy_model& m_;
  weft::model_desc d_;
  std::vector<unit> units_;
};

// Proven at compile time: the model has what the runner calls for every (kind, phase) a
// lowered ZB-H1 uses — dX and dW included, the transfers routed by weft.
constexpr weft::kind_phase_set zb_h1_uses =
    weft::uses_lowered(weft::zb_h1({.ranks = 4, .micro = 8}));
static_assert(weft::exec::runnable<toy_step, zb_h1_uses>);

}  // namespace

int main() {
  constexpr int ranks = 4, micro = 8, width = 16;
  const weft::pipeline_params p{.ranks = ranks, .micro = micro, .transfers = true};
  struct named {
    const char* name;
    weft::schedule s;
  };
  int failures = 0;
  for (const named& n : {named{"1F1B", weft::one_f_one_b(p)}, named{"ZB-H1", weft::zb_h1(p)},
                         named{"DualPipeV", weft::dualpipev(p)}}) {
    const weft::program prog = weft::lower(n.s);  // checked: an illegal schedule throws here
    const weft::model_desc& d = prog.source.model;
    const toy_model model(d.chunks(), width, micro);
    toy_step step(model, d);
    weft::exec::runner runner(prog, 1, {.workers = 2});
    const weft::timeline t = runner.run(step);
    const std::vector<vec> got = step.grads(), want = model.serial_grads();
    const bool equal = got == want;
    failures += equal ? 0 : 1;
    std::printf("%-10s %2d stages on %d ranks, %3zu ops: %.2f ms, gradients %s the serial loop's\n",
                n.name, d.chunks(), ranks, prog.size(), 1e3 * t.makespan.count(),
                equal ? "equal" : "DIFFER from");
  }
  return failures == 0 ? 0 : 1;
}
