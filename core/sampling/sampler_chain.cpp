#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "sampling/samplers.h"
#include "util/error.h"

namespace wb {

static void require_finite(float value, const char* name) {
    if (!std::isfinite(value)) {
        throw Error(std::string("sampling parameter ") + name + " is " + std::to_string(value) +
                    "; it must be a finite number");
    }
}

// Only values without a sensible reading are rejected; the others are interpreted as documented
// at SamplerChain::set_params.
static void validate(const SamplingParams& p) {
    require_finite(p.temperature, "temperature");
    require_finite(p.top_p, "top_p");
    require_finite(p.min_p, "min_p");
    require_finite(p.typical_p, "typical_p");
    require_finite(p.repeat_penalty, "repeat_penalty");
    require_finite(p.frequency_penalty, "frequency_penalty");
    require_finite(p.presence_penalty, "presence_penalty");
    if (p.repeat_penalty <= 0.0f) {
        throw Error("sampling parameter repeat_penalty is " + std::to_string(p.repeat_penalty) +
                    "; it must be > 0 (1 = off)");
    }
    if (p.repeat_last_n < -1) {
        throw Error("sampling parameter repeat_last_n is " + std::to_string(p.repeat_last_n) +
                    "; it must be -1 (all history), 0 (off) or a positive window");
    }
}

// The k most likely candidates with p renormalised over all survivors, without touching the set:
// tracing must not change what is sampled.
static std::vector<Candidate> top_candidates(const CandidateSet& cands, size_t k) {
    const auto& data = cands.data;
    std::vector<Candidate> top = best_candidates(data, k);
    if (top.empty()) {
        return top;
    }
    const float max_logit = top.front().logit;
    if (max_logit == -std::numeric_limits<float>::infinity()) {
        for (Candidate& c : top) {
            c.p = 1.0f / static_cast<float>(data.size());
        }
        return top;
    }
    // compute_probs' arithmetic (float terms, double sum), so the trace's p of the final stage is the
    // p the draw used.
    double sum = 0.0;
    for (const Candidate& c : data) {
        sum += std::exp(c.logit - max_logit);
    }
    const double inv = 1.0 / sum;
    for (Candidate& c : top) {
        c.p = static_cast<float>(std::exp(c.logit - max_logit) * inv);
    }
    return top;
}

SamplerChain::SamplerChain(const SamplingParams& params) : params_(params) {
    validate(params_);
    reseed();
    rebuild();
}

SamplerChain::~SamplerChain() = default;

void SamplerChain::apply(CandidateSet& cands) {
    for (const auto& stage : stages_) {
        stage->apply(cands);
    }
}

void SamplerChain::accept(int32_t token) {
    // The whole history is kept (4 bytes a token) because a later set_params may widen the window.
    history_.push_back(token);
}

void SamplerChain::reset() {
    history_.clear();
    reseed();
}

void SamplerChain::set_params(const SamplingParams& params) {
    validate(params);
    const bool seed_changed = params.seed != params_.seed;
    params_ = params;
    if (seed_changed) {
        reseed();
    }
    rebuild();
}

int32_t SamplerChain::sample(const float* logits, int32_t n_vocab, std::vector<SamplerStageTrace>* trace,
                             size_t trace_top) {
    if (n_vocab <= 0) {
        throw Error("cannot sample from an empty logits row (n_vocab = " + std::to_string(n_vocab) + ")");
    }
    scratch_.assign(logits, n_vocab);
    if (trace == nullptr) {
        apply(scratch_);
    } else {
        trace->clear();
        for (const auto& stage : stages_) {
            SamplerStageTrace entry;
            entry.stage = stage->name();
            entry.n_before = scratch_.data.size();
            stage->apply(scratch_);
            entry.n_after = scratch_.data.size();
            entry.top_after = top_candidates(scratch_, trace_top);
            trace->push_back(std::move(entry));
        }
    }
    return scratch_.data[static_cast<size_t>(scratch_.selected)].id;
}

int32_t SamplerChain::top_needed(int32_t n_vocab, int32_t n_lowered, bool vocab_p) const {
    const SamplingParams& p = params_;
    int64_t need = 0;
    if (p.is_greedy()) {
        if (vocab_p) {
            return 0;
        }
        need = 1;
    } else {
        if (p.top_k <= 0) {
            return 0;
        }
        need = p.top_k;
    }
    const bool penalties_on = p.repeat_last_n != 0 && !history_.empty() &&
                              (p.repeat_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f);
    if (penalties_on) {
        // A raised logit can come from anywhere in the vocabulary.
        if (p.repeat_penalty < 1.0f || p.frequency_penalty < 0.0f || p.presence_penalty < 0.0f) {
            return 0;
        }
        // Each position of the window is at most one lowered token (PenaltiesSampler's window).
        need += p.repeat_last_n < 0 ? int64_t(history_.size())
                                    : std::min<int64_t>(int64_t(history_.size()), p.repeat_last_n);
    }
    need += std::max(n_lowered, 0);
    return need > kMaxTopNeeded || need >= n_vocab ? 0 : static_cast<int32_t>(need);
}

int32_t SamplerChain::sample_top(const int32_t* ids, const float* logits, int32_t n) {
    if (n <= 0) {
        throw Error("cannot sample from an empty candidate list (n = " + std::to_string(n) + ")");
    }
    CandidateSet& set = scratch_;
    set.data.resize(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
        const float logit = std::isnan(logits[i]) ? -std::numeric_limits<float>::infinity() : logits[i];
        set.data[static_cast<size_t>(i)] = Candidate{ids[i], logit, 0.0f};
    }
    // Masked entries may sit anywhere; otherwise the list arrives sorted and the flag says so, as
    // top-k would have left it.
    set.sorted = std::is_sorted(set.data.begin(), set.data.end(), candidate_before);
    set.selected = -1;
    apply(set);
    return set.data[static_cast<size_t>(set.selected)].id;
}

void SamplerChain::rebuild() {
    // Stages are stateless apart from references to history_ and rng_, so rebuilding them on every
    // parameter change keeps both.
    stages_.clear();
    stages_.push_back(std::make_unique<PenaltiesSampler>(history_, params_.repeat_last_n, params_.repeat_penalty,
                                                         params_.frequency_penalty, params_.presence_penalty));
    if (params_.is_greedy()) {
        stages_.push_back(std::make_unique<GreedySampler>());
        return;
    }
    stages_.push_back(std::make_unique<TopKSampler>(params_.top_k));
    stages_.push_back(std::make_unique<TypicalSampler>(params_.typical_p));
    stages_.push_back(std::make_unique<TopPSampler>(params_.top_p));
    stages_.push_back(std::make_unique<MinPSampler>(params_.min_p));
    stages_.push_back(std::make_unique<TemperatureSampler>(params_.temperature));
    stages_.push_back(std::make_unique<DistSampler>(rng_));
}

void SamplerChain::reseed() {
    uint64_t seed = params_.seed;
    if (seed == SamplingParams::kRandomSeed) {
        std::random_device device;
        // Never hand out kRandomSeed itself: typing seed_in_use() back in must replay this stream.
        do {
            seed = (static_cast<uint64_t>(device()) << 32) | device();
        } while (seed == SamplingParams::kRandomSeed);
    }
    seed_in_use_ = seed;
    rng_.seed(seed);
}

}  // namespace wb
