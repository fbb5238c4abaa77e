#pragma once
// The vocabulary of a model as the samplers see it (SamplerVocab: pieces for a grammar, a tokenizer
// for DRY's breakers, the end-of-generation ids). A Session makes one for its replies; the server
// makes one to check a request's grammar before it queues the request.
#include <memory>

#include "engine/model.h"
#include "sampling/sampler.h"

namespace wb {

// Refers to the model's tokenizer: the model must outlive it.
std::shared_ptr<const SamplerVocab> make_sampler_vocab(const Model& model);

}  // namespace wb
