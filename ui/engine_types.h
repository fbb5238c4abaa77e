#pragma once
// Engine values that cross from the inference thread to the GUI thread inside queued signals. Queued
// connections copy their arguments through QMetaType, so every type used in a cross-thread signal is
// declared here and registered once by registerEngineTypes() before the first connection is made.
#include <memory>
#include <vector>

#include <QHash>
#include <QMetaType>
#include <QString>
#include <QStringList>
#include <QVector>

#include "engine/head_stats.h"
#include "engine/model_compare.h"
#include "engine/observer.h"
#include "engine/session.h"
#include "chat/chat_template.h"
#include "engine/trace_inspection.h"
#include "sampling/trace_file.h"

// A batch of attention events: the worker hands over up to 30 batches a second instead of one signal
// per layer and token. Shared and immutable, so the queued copy is a pointer copy.
using AttentionBatch = std::shared_ptr<const std::vector<wb::AttentionEvent>>;
using ChatMessages = std::vector<wb::ChatMessage>;

// The chat template the worker renders prompts with, and where it came from (the Prompt view).
struct ChatTemplateInfo {
    QString modelPath;
    QString description;     // ChatTemplate::description(): "the model's own (Jinja)", "built-in chatml"
    QString origin;          // "model", "file" (a per-model replacement) or "builtin"
    QString originDetail;    // the replacement's file name, or the built-in format's name
    QString source;          // the Jinja source; empty for a built-in format
    QString warning;         // why a built-in format is used (the file has no template)
    QString error;           // why the template cannot render (it does not parse), with line and column
};

// Per-token marks of a recorded prompt (PromptInfo::flags).
enum PromptTokenFlag : int {
    PromptTokenControl = 1,       // a control / user-defined token (<|im_start|>), not plain text
    PromptTokenFromInput = 2,     // covers text of a message or tool (what a user typed)
    PromptTokenFromTemplate = 4,  // covers text the template wrote (or the tokenizer added, the BOS)
    PromptTokenForced = 8,        // after the rendered prompt: a fork's given first tokens of the reply
};

// The tokenised prompt of one generation, sent before its first token so the views can label positions.
struct PromptInfo {
    quint64 requestId = 0;
    QVector<int> ids;        // the whole context the reply continues (template-rendered conversation)
    QStringList pieces;      // text of each id (special tokens rendered)
    int reused = 0;          // leading positions whose K/V the session keeps from the previous turn
    // How those positions sit in the session's cache after an earlier context shift, as the engine
    // says it (Session::reuse_prefix, shifted_keep, dropped): positions from shiftKeep + shiftDropped
    // on are at cache positions shiftDropped lower; shiftDropped 0: the cache holds them as they are.
    int shiftKeep = 0;
    int shiftDropped = 0;
    // The tokens of the old turns the Trim policy keeps out of this prompt, summed over the trims in
    // force as the worker made them (0: the whole conversation is sent).
    int trimDropped = 0;
    QString text;            // the template's rendering the ids were encoded from
    QVector<int> flags;      // PromptTokenFlag bits, one per id (prompt_record.h)
    ChatTemplateInfo chatTemplate;  // what rendered it
};

// What the inspection views show of one generated token, recorded by the engine on the worker thread:
// the logit lens (TokenEvent::lens, with the text of every token it names, since the GUI has no
// tokenizer) and the head statistics of the attention row whose logits drew the token (head_stats.h).
// Empty parts were not asked for (their panel was not shown). Shared and immutable: a TokenRecord copy
// is a pointer copy.
struct TokenInspection {
    int index = 0;                       // TokenEvent::index of the token
    std::vector<wb::LensLayer> lens;
    QHash<int, QString> pieces;          // tokenText of each id in lens (and of the drawn token)
    std::vector<wb::HeadStats> heads;    // every layer's query heads, layer by layer
};
using TokenInspectionPtr = std::shared_ptr<const TokenInspection>;

// What the Timings panel shows of one generation, recorded on the worker thread while the panel is
// shown (WorkerObserver): the engine's running totals and one value per token, which the coalesced
// timingsChanged signal cannot carry (it drops the values between two of its signals). Shared and
// immutable: a queued copy is a pointer copy.
struct TimingRecord {
    wb::Timings totals;            // the engine's last report (Timings; layer_ms when per-layer timing was asked)
    // [i - 1] for token i >= 1 of the reply: milliseconds from token i - 1's event to token i's, as the
    // worker saw them (the forward pass, the sampling and the inspection's capture together).
    std::vector<double> tokenMs;
    // [k]: decode step k's forward pass (Timings::last_token_ms), the step that takes token k in and
    // gives the logits of token k + 1 (or of the end of the reply).
    std::vector<double> stepMs;
};
using TimingRecordPtr = std::shared_ptr<const TimingRecord>;

// How one generation ended.
struct GenerationSummary {
    quint64 requestId = 0;
    QString text;            // the reply, without a matched stop string
    wb::StopReason reason = wb::StopReason::NONE;
    QString error;           // when reason is ERROR
    wb::Timings timings;
    int contextTokens = 0;   // tokens whose K/V are cached after the reply
    // Refused before the prefill: the prompt (promptTokens) leaves the reply no room in the context
    // (contextSize; context_budget.h).
    bool promptTooLong = false;
    int promptTokens = 0;
    int contextSize = 0;
    quint64 seed = 0;
    wb::ContextPolicy policy = wb::ContextPolicy::STOP;  // what a full context did in this request
    int keep = 0;            // the tokens a context shift would keep (the template's prefix and system prompt)
    std::vector<wb::ContextCut> cuts;  // the cuts it made (InferenceWorker::contextCut sent each one)
    // What a replay of the reply needs (Export sampler trace): the ids the last round's drawn tokens
    // followed (rendered prompt and given tokens), the sampling settings at that round's start, whether
    // they changed while it ran (a live change: the file's settings would not be the ones used) and how
    // many rounds (a trimmed-and-continued reply has more than one).
    std::vector<int32_t> promptIds;
    wb::SamplingParams params;
    bool paramsChanged = false;
    int rounds = 0;
};

// A trace file's contents (core/engine/trace_inspection.h: the sampler trace and the inspector's lens
// and head records) crossing threads: the one to replay, the replay's own.
using InspectedTracePtr = std::shared_ptr<const wb::InspectedTrace>;

// What the Compare view shows: compare_models' result, untouched, with the text of every token it
// names (the GUI has no tokenizer) and the file compared against.
struct ModelCompareResult {
    QString otherPath;
    wb::ModelComparison comparison;
    QHash<int, QString> pieces;  // tokenText of each reply token and each model's top-1 token
};
using ModelCompareResultPtr = std::shared_ptr<const ModelCompareResult>;

Q_DECLARE_METATYPE(wb::TokenEvent)
Q_DECLARE_METATYPE(wb::KvStats)
Q_DECLARE_METATYPE(wb::DeviceMemory)
Q_DECLARE_METATYPE(wb::Timings)
Q_DECLARE_METATYPE(wb::SamplingParams)
Q_DECLARE_METATYPE(AttentionBatch)
Q_DECLARE_METATYPE(TokenInspectionPtr)
Q_DECLARE_METATYPE(TimingRecordPtr)
Q_DECLARE_METATYPE(ChatMessages)
Q_DECLARE_METATYPE(PromptInfo)
Q_DECLARE_METATYPE(ChatTemplateInfo)
Q_DECLARE_METATYPE(GenerationSummary)
Q_DECLARE_METATYPE(wb::ContextCut)
Q_DECLARE_METATYPE(wb::GrammarRefusal)
Q_DECLARE_METATYPE(InspectedTracePtr)
Q_DECLARE_METATYPE(ModelCompareResultPtr)

// Registers the types above with QMetaType; idempotent.
void registerEngineTypes();

// A token's own bytes as text: valid UTF-8 as it is, any other byte (part of a multi-byte character
// split across tokens) as \xNN.
QString tokenText(const std::string& bytes);

// A piece as the inspection views quote it: 'text' with new lines as ↵, ∅ when empty.
QString quotedPiece(QString piece);

// Human-readable byte count ("1.5 MiB").
QString formatBytes(double bytes);
