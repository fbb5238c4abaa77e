#include "engine/sampler_vocab.h"

#include "tokenizer/tokenizer.h"

namespace wb {

std::shared_ptr<const SamplerVocab> make_sampler_vocab(const Model& model) {
    // DRY turns its sequence breakers into tokens through the model's tokenizer; a grammar reads pieces.
    const Tokenizer& tok = model.tokenizer();
    auto vocab = std::make_shared<SamplerVocab>();
    vocab->n_vocab = model.config().n_vocab;
    vocab->piece = [&tok](int32_t id) { return tok.token_to_piece(id, true); };
    vocab->tokenize = [&tok](const std::string& text) { return tok.encode(text, false, false); };
    vocab->is_eog = [&tok](int32_t id) { return tok.is_eog(id); };  // a grammar ends only where complete
    return vocab;
}

}  // namespace wb
