#include "prompt_record.h"

#include <vector>

PromptInfo recordPrompt(const wb::ChatPrompt& p, const std::vector<int32_t>& ids, const wb::Tokenizer& tok) {
    PromptInfo info;
    info.text = QString::fromStdString(p.text);
    // Byte i of the text came from the input when its segment did.
    std::vector<bool> fromInput;
    fromInput.reserve(p.text.size());
    for (const auto& s : p.segments) fromInput.insert(fromInput.end(), s.text.size(), s.from_input);
    size_t at = 0;  // where the next token's bytes begin in the text
    for (size_t k = 0; k < ids.size(); ++k) {
        const int32_t id = ids[k];
        const std::string piece = tok.token_to_piece(id, true);
        int flags = k < p.ids.size() ? 0 : PromptTokenForced;
        const wb::TokenType type = tok.token_type(id);
        if (type == wb::TokenType::CONTROL || type == wb::TokenType::USER_DEFINED) flags |= PromptTokenControl;
        if (flags & PromptTokenForced) {
            // not part of the rendered text
        } else if (!piece.empty() && p.text.compare(at, piece.size(), piece) == 0) {
            for (size_t i = at; i < at + piece.size() && i < fromInput.size(); ++i)
                flags |= fromInput[i] ? PromptTokenFromInput : PromptTokenFromTemplate;
            at += piece.size();
        } else if (piece.size() > 1 && piece[0] == ' ' && p.text.compare(at, piece.size() - 1, piece, 1) == 0) {
            // A SentencePiece prefix space the tokenizer adds in front of the text.
            for (size_t i = at; i < at + piece.size() - 1 && i < fromInput.size(); ++i)
                flags |= fromInput[i] ? PromptTokenFromInput : PromptTokenFromTemplate;
            at += piece.size() - 1;
        } else {
            flags |= PromptTokenFromTemplate;  // added by the tokenizer, or the dropped BOS text
        }
        info.ids.append(id);
        info.pieces.append(QString::fromStdString(piece));
        info.flags.append(flags);
    }
    return info;
}
