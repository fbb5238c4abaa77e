#include "conversation.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

#include <algorithm>
#include <cmath>
#include <limits>

#include "sampling/grammar/gbnf.h"
#include "sampling/sampler.h"
#include "util/error.h"

namespace {

// 1: one path of messages. 2: the tree of every version (nodes with their parent and active child),
// per-token candidates, entropy and sampler trace, title and dates.
constexpr int kFormatVersion = 2;
// The longest title made from the first message.
constexpr int kTitleChars = 60;

// JSON has no NaN: a stage without that threshold is null (and files from before it was kept lack
// it); so is a probability nobody knows (a remote server's token p without logprobs, its p_final).
QJsonValue thresholdToJson(double value) { return std::isfinite(value) ? QJsonValue(value) : QJsonValue(); }
double thresholdFromJson(const QJsonValue& v) {
    return v.isDouble() ? v.toDouble() : std::numeric_limits<double>::quiet_NaN();
}

QJsonObject tokenToJson(const TokenRecord& t) {
    QJsonObject o{{QStringLiteral("id"), t.id}, {QStringLiteral("piece"), t.piece}, {QStringLiteral("p"), thresholdToJson(t.p)},
                  {QStringLiteral("pos"), t.position}};
    if (t.entropy > 0) o.insert(QStringLiteral("entropy"), double(t.entropy));
    // Only where it differs from the text it added (a token whose text the reply held back).
    if (!t.tokenPiece.isEmpty() && t.tokenPiece != t.piece) o.insert(QStringLiteral("token_piece"), t.tokenPiece);
    if (!t.candidates.empty()) {
        // [id, piece, p raw, p final] each: the inspector's table, and what a fork from the token picks from.
        QJsonArray cands;
        for (const wb::TokenCandidate& c : t.candidates)
            cands.append(QJsonArray{c.id, QString::fromStdString(c.piece), thresholdToJson(c.p_raw),
                                    thresholdToJson(c.p_final)});
        o.insert(QStringLiteral("candidates"), cands);
    }
    if (!t.trace.empty()) {
        // [stage, kept before, kept after, detail, [[id, logit, p], ...], threshold, p cut-off] each: the
        // sampler trace the inspector's stage table shows, so a reopened reply explains its draws as it
        // did live (a threshold the stage did not have is null).
        QJsonArray stages;
        for (const wb::SamplerStageTrace& st : t.trace) {
            QJsonArray top;
            for (const wb::Candidate& c : st.top_after) top.append(QJsonArray{c.id, double(c.logit), double(c.p)});
            stages.append(QJsonArray{QString::fromStdString(st.stage), qint64(st.n_before), qint64(st.n_after),
                                     QString::fromStdString(st.detail), top, thresholdToJson(st.threshold),
                                     thresholdToJson(st.p_cutoff)});
        }
        o.insert(QStringLiteral("trace"), stages);
    }
    return o;
}

// A stage count from a file: never negative (a hostile or damaged file must not wrap to 2^64).
size_t countFromJson(const QJsonValue& v) {
    return size_t(std::max<qint64>(0, v.toInteger()));
}

TokenRecord tokenFromJson(const QJsonObject& o) {
    TokenRecord t;
    t.id = o.value(QStringLiteral("id")).toInt();
    t.piece = o.value(QStringLiteral("piece")).toString();
    t.tokenPiece = o.value(QStringLiteral("token_piece")).toString(t.piece);
    // A p the engine did not know (a remote server's token without logprobs) is null, read as NaN.
    t.p = float(thresholdFromJson(o.value(QStringLiteral("p"))));
    t.position = o.value(QStringLiteral("pos")).toInt(-1);
    t.entropy = float(o.value(QStringLiteral("entropy")).toDouble());
    for (const auto& v : o.value(QStringLiteral("candidates")).toArray()) {
        const QJsonArray a = v.toArray();
        t.candidates.push_back({int32_t(a.at(0).toInt()), a.at(1).toString().toStdString(),
                                float(thresholdFromJson(a.at(2))), float(thresholdFromJson(a.at(3)))});
    }
    for (const auto& v : o.value(QStringLiteral("trace")).toArray()) {
        const QJsonArray a = v.toArray();
        wb::SamplerStageTrace st;
        st.stage = a.at(0).toString().toStdString();
        st.n_before = countFromJson(a.at(1));
        st.n_after = countFromJson(a.at(2));
        st.detail = a.at(3).toString().toStdString();
        for (const auto& c : a.at(4).toArray()) {
            const QJsonArray ca = c.toArray();
            st.top_after.push_back({int32_t(ca.at(0).toInt()), float(ca.at(1).toDouble()), float(ca.at(2).toDouble())});
        }
        st.threshold = thresholdFromJson(a.at(5));
        st.p_cutoff = thresholdFromJson(a.at(6));
        t.trace.push_back(std::move(st));
    }
    return t;
}

QJsonObject entryToJson(const ChatEntry& m) {
    QJsonObject o{{QStringLiteral("role"), m.role}, {QStringLiteral("content"), m.content}};
    if (!m.stopReason.isEmpty()) o.insert(QStringLiteral("stop_reason"), m.stopReason);
    if (!m.tokens.isEmpty()) {
        QJsonArray toks;
        for (const TokenRecord& t : m.tokens) toks.append(tokenToJson(t));
        o.insert(QStringLiteral("tokens"), toks);
    }
    return o;
}

// A message of a file; false (and the error) for a role the chat does not have.
bool entryFromJson(const QJsonObject& o, int number, ChatEntry* m, QString* error) {
    m->role = o.value(QStringLiteral("role")).toString();
    if (m->role != QLatin1String("user") && m->role != QLatin1String("assistant")) {
        if (error) *error = QObject::tr("message %1 has the unknown role \"%2\"").arg(number).arg(m->role);
        return false;
    }
    m->content = o.value(QStringLiteral("content")).toString();
    m->stopReason = o.value(QStringLiteral("stop_reason")).toString();
    for (const auto& t : o.value(QStringLiteral("tokens")).toArray()) m->tokens.append(tokenFromJson(t.toObject()));
    return true;
}

QString isoDate(const QDateTime& d) {
    return d.isValid() ? d.toUTC().toString(Qt::ISODateWithMs) : QString();
}

}  // namespace

Conversation::Conversation() {
    m_nodes[kRoot] = Node{};
}

// --- The tree -------------------------------------------------------------------------------------

int Conversation::addNode(int parent, const ChatEntry& entry) {
    const int id = m_nextId++;
    Node n;
    n.parent = parent;
    n.entry = entry;
    m_nodes[id] = n;
    m_nodes[parent].children.append(id);
    m_nodes[parent].active = id;
    return id;
}

int Conversation::parentOf(int index) const {
    return index == 0 ? kRoot : m_path[index - 1];
}

void Conversation::syncPath() {
    // Messages removed from `messages` directly take their nodes (and what hangs below) with them.
    while (m_path.size() > messages.size()) {
        const int node = m_path.takeLast();
        QVector<int> doomed{node};
        for (int i = 0; i < doomed.size(); ++i) doomed += m_nodes[doomed[i]].children;
        Node& parent = m_nodes[m_nodes[node].parent];
        parent.children.removeAll(node);
        parent.active = parent.children.isEmpty() ? -1 : parent.children.last();
        for (int id : doomed) m_nodes.erase(id);
    }
    while (m_path.size() < messages.size()) m_path.append(addNode(parentOf(int(m_path.size())), {}));
}

void Conversation::cutPath(int from) {
    for (int j = from; j < m_path.size(); ++j) m_nodes[m_path[j]].entry = std::move(messages[j]);
    messages.resize(from);
    m_path.resize(from);
}

void Conversation::extendPath(int node) {
    while (node >= 0) {
        Node& n = m_nodes[node];
        messages.append(std::move(n.entry));
        n.entry = ChatEntry{};
        m_path.append(node);
        node = n.active;
    }
}

void Conversation::append(const ChatEntry& entry) {
    syncPath();
    messages.append(entry);
    syncPath();
}

void Conversation::removeLast() {
    syncPath();
    if (messages.isEmpty()) return;
    const int node = m_path.last();
    const int parent = m_nodes[node].parent;
    messages.removeLast();
    syncPath();  // drops the node
    if (m_nodes[parent].active >= 0) extendPath(m_nodes[parent].active);
}

void Conversation::addVersion(int index, const ChatEntry& entry) {
    syncPath();
    if (index < 0 || index > messages.size()) return;
    const int parent = parentOf(index);
    cutPath(index);
    m_path.append(addNode(parent, {}));
    messages.append(entry);
}

int Conversation::versionCount(int index) const {
    if (index < 0 || index >= m_path.size()) return 1;
    return int(m_nodes.at(parentOf(index)).children.size());
}

int Conversation::versionIndex(int index) const {
    if (index < 0 || index >= m_path.size()) return 0;
    return int(m_nodes.at(parentOf(index)).children.indexOf(m_path[index]));
}

bool Conversation::selectVersion(int index, int version) {
    syncPath();
    if (index < 0 || index >= messages.size()) return false;
    const int parent = parentOf(index);
    const QVector<int> siblings = m_nodes[parent].children;
    if (version < 0 || version >= siblings.size()) return false;
    if (siblings[version] == m_path[index]) return true;
    cutPath(index);
    m_nodes[parent].active = siblings[version];
    extendPath(siblings[version]);
    return true;
}

int Conversation::totalMessages() const {
    return int(m_nodes.size()) - 1 + std::max(0, int(messages.size() - m_path.size()));
}

void Conversation::clearMessages() {
    messages.clear();
    m_path.clear();
    m_nodes.clear();
    m_nodes[kRoot] = Node{};
    m_nextId = 1;
}

QStringList Conversation::allContents() const {
    QStringList out;
    for (const auto& [id, node] : fullTree())
        if (id != kRoot) out << node.entry.content;
    return out;
}

std::map<int, Conversation::Node> Conversation::fullTree() const {
    Conversation copy = *this;
    copy.syncPath();
    copy.cutPath(0);
    return copy.m_nodes;
}

// --- Text ----------------------------------------------------------------------------------------

QString Conversation::displayTitle() const {
    if (!title.trimmed().isEmpty()) return title.trimmed();
    for (const ChatEntry& m : messages) {
        if (m.role != QLatin1String("user")) continue;
        QString line = m.content.trimmed().section(QLatin1Char('\n'), 0, 0).simplified();
        if (line.size() > kTitleChars) line = line.left(kTitleChars - 1).trimmed() + QStringLiteral("…");
        if (!line.isEmpty()) return line;
    }
    return QObject::tr("New chat");
}

Conversation Conversation::fromApiMessages(const ChatMessages& messages) {
    Conversation c;
    size_t i = 0;
    QStringList system;
    for (; i < messages.size() && messages[i].role == "system"; ++i) system << QString::fromStdString(messages[i].content);
    c.systemPrompt = system.join(QStringLiteral("\n\n"));
    for (; i < messages.size(); ++i)
        c.append({QString::fromStdString(messages[i].role), QString::fromStdString(messages[i].content), {}, {}});
    return c;
}

ChatMessages Conversation::toEngineMessages(int count) const {
    ChatMessages out;
    if (!systemPrompt.isEmpty()) out.push_back({"system", systemPrompt.toStdString()});
    const int n = count < 0 ? int(messages.size()) : std::min(count, int(messages.size()));
    for (int i = 0; i < n; ++i) out.push_back({messages[i].role.toStdString(), messages[i].content.toStdString()});
    return out;
}

// [[id, bias], ...]; JSON has no infinity, so a ban (-inf) is written as null.
static QJsonArray logitBiasToJson(const std::vector<wb::LogitBias>& biases) {
    QJsonArray out;
    for (const auto& b : biases)
        out.append(QJsonArray{b.token, std::isfinite(b.bias) ? QJsonValue(double(b.bias)) : QJsonValue(QJsonValue::Null)});
    return out;
}

// The grammar's mode as the files name it.
static QString grammarModeName(wb::GrammarMode mode) {
    switch (mode) {
    case wb::GrammarMode::GBNF: return QStringLiteral("gbnf");
    case wb::GrammarMode::JSON_SCHEMA: return QStringLiteral("json_schema");
    case wb::GrammarMode::NONE: break;
    }
    return QStringLiteral("none");
}

// The grammar in force, and the mode and text the user wrote it in. A file from before the text was
// kept has the GBNF only (and no mode): it is shown as GBNF. A grammar that does not parse (a file
// edited by hand) would stop every reply, so none is in force, but its text is kept for the editor; so
// is a text that did not compile when it was saved (the grammar in force then is the last one that
// did). Mode none means no grammar, whatever GBNF a hand-edited file still has beside it: the panel
// would show None while the grammar constrained every reply.
static void grammarFromJson(const QJsonObject& o, wb::SamplingParams& p) {
    p.grammar = o.value(QStringLiteral("grammar")).toString().toStdString();
    const QString mode = o.value(QStringLiteral("grammar_mode")).toString();
    p.grammar_source = o.value(QStringLiteral("grammar_source")).toString().toStdString();
    // An unknown mode (a newer file) shows its text as GBNF, with the error if it is not.
    p.grammar_mode = mode.isEmpty() || mode == QLatin1String("none") ? wb::GrammarMode::NONE
                     : mode == QLatin1String("json_schema")          ? wb::GrammarMode::JSON_SCHEMA
                                                                     : wb::GrammarMode::GBNF;
    const bool older_file = !o.contains(QStringLiteral("grammar_mode"));
    if (older_file && p.grammar_source.empty() && !p.grammar.empty()) {
        p.grammar_mode = wb::GrammarMode::GBNF;
        p.grammar_source = p.grammar;
    }
    if (p.grammar_mode == wb::GrammarMode::NONE) p.grammar.clear();
    try {
        if (!p.grammar.empty()) wb::parse_gbnf(p.grammar);
    } catch (const wb::Error&) {
        p.grammar.clear();
    }
}

QJsonObject samplingToJson(const wb::SamplingParams& p) {
    // A grammar set without a mode (from the CLI's flags, or a conversation from before the mode was
    // kept) is GBNF in force: written as such, since a file's mode none means no grammar.
    const bool bare_grammar = p.grammar_mode == wb::GrammarMode::NONE && !p.grammar.empty();
    const wb::GrammarMode written_mode = bare_grammar ? wb::GrammarMode::GBNF : p.grammar_mode;
    const std::string& written_source = bare_grammar && p.grammar_source.empty() ? p.grammar : p.grammar_source;
    QJsonArray stops;
    for (const auto& s : p.stop) stops.append(QString::fromStdString(s));
    QJsonArray breakers;
    for (const auto& s : p.dry_sequence_breakers) breakers.append(QString::fromStdString(s));
    return QJsonObject{
        {QStringLiteral("temperature"), double(p.temperature)},
        {QStringLiteral("top_k"), p.top_k},
        {QStringLiteral("top_p"), double(p.top_p)},
        {QStringLiteral("min_p"), double(p.min_p)},
        {QStringLiteral("typical_p"), double(p.typical_p)},
        {QStringLiteral("repeat_penalty"), double(p.repeat_penalty)},
        {QStringLiteral("repeat_last_n"), p.repeat_last_n},
        {QStringLiteral("frequency_penalty"), double(p.frequency_penalty)},
        {QStringLiteral("presence_penalty"), double(p.presence_penalty)},
        // JSON numbers are doubles: a 64-bit seed is kept exactly as a string.
        {QStringLiteral("seed"), QString::number(p.seed)},
        {QStringLiteral("max_tokens"), p.max_tokens},
        {QStringLiteral("stop"), stops},
        {QStringLiteral("samplers"), QString::fromStdString(wb::join_sampler_sequence(p.samplers))},
        {QStringLiteral("logit_bias"), logitBiasToJson(p.logit_bias)},
        {QStringLiteral("xtc_probability"), double(p.xtc_probability)},
        {QStringLiteral("xtc_threshold"), double(p.xtc_threshold)},
        {QStringLiteral("top_n_sigma"), double(p.top_n_sigma)},
        {QStringLiteral("mirostat"), p.mirostat},
        {QStringLiteral("mirostat_tau"), double(p.mirostat_tau)},
        {QStringLiteral("mirostat_eta"), double(p.mirostat_eta)},
        {QStringLiteral("dry_multiplier"), double(p.dry_multiplier)},
        {QStringLiteral("dry_base"), double(p.dry_base)},
        {QStringLiteral("dry_allowed_length"), p.dry_allowed_length},
        {QStringLiteral("dry_penalty_last_n"), p.dry_penalty_last_n},
        {QStringLiteral("dry_sequence_breakers"), breakers},
        {QStringLiteral("grammar"), QString::fromStdString(p.grammar)},
        {QStringLiteral("grammar_mode"), grammarModeName(written_mode)},
        {QStringLiteral("grammar_source"), QString::fromStdString(written_source)},
    };
}

wb::SamplingParams samplingFromJson(const QJsonObject& o) {
    wb::SamplingParams d;
    wb::SamplingParams p;
    auto f = [&o](const char* k, float def) { return float(o.value(QLatin1String(k)).toDouble(def)); };
    auto i = [&o](const char* k, int def) { return o.value(QLatin1String(k)).toInt(def); };
    p.temperature = f("temperature", d.temperature);
    p.top_k = i("top_k", d.top_k);
    p.top_p = f("top_p", d.top_p);
    p.min_p = f("min_p", d.min_p);
    p.typical_p = f("typical_p", d.typical_p);
    p.repeat_penalty = f("repeat_penalty", d.repeat_penalty);
    p.repeat_last_n = i("repeat_last_n", d.repeat_last_n);
    p.frequency_penalty = f("frequency_penalty", d.frequency_penalty);
    p.presence_penalty = f("presence_penalty", d.presence_penalty);
    bool ok = false;
    const quint64 seed = o.value(QStringLiteral("seed")).toString().toULongLong(&ok);
    p.seed = ok ? seed : d.seed;
    p.max_tokens = i("max_tokens", d.max_tokens);
    p.stop.clear();
    for (const auto& s : o.value(QStringLiteral("stop")).toArray()) p.stop.push_back(s.toString().toStdString());
    // The samplers that follow llama.cpp; files from before them get the defaults (all off).
    try {
        if (o.contains(QStringLiteral("samplers")))
            p.samplers = wb::parse_sampler_sequence(o.value(QStringLiteral("samplers")).toString().toStdString());
        // An empty order would run no stage at all (no temperature, no top-k), which the CLI refuses.
        if (p.samplers.empty()) p.samplers = d.samplers;
    } catch (const wb::Error&) {
        p.samplers = d.samplers;  // an unknown name (a newer file): the default order rather than none
    }
    for (const auto& e : o.value(QStringLiteral("logit_bias")).toArray()) {
        const QJsonArray b = e.toArray();
        if (b.size() == 2 && b[0].toInt(-1) >= 0)
            p.logit_bias.push_back({b[0].toInt(), b[1].isNull() ? -INFINITY : float(b[1].toDouble())});
    }
    p.xtc_probability = f("xtc_probability", d.xtc_probability);
    p.xtc_threshold = f("xtc_threshold", d.xtc_threshold);
    p.top_n_sigma = f("top_n_sigma", d.top_n_sigma);
    p.mirostat = i("mirostat", d.mirostat);
    p.mirostat_tau = f("mirostat_tau", d.mirostat_tau);
    p.mirostat_eta = f("mirostat_eta", d.mirostat_eta);
    p.dry_multiplier = f("dry_multiplier", d.dry_multiplier);
    p.dry_base = f("dry_base", d.dry_base);
    p.dry_allowed_length = i("dry_allowed_length", d.dry_allowed_length);
    p.dry_penalty_last_n = i("dry_penalty_last_n", d.dry_penalty_last_n);
    if (o.contains(QStringLiteral("dry_sequence_breakers"))) {
        p.dry_sequence_breakers.clear();
        for (const auto& s : o.value(QStringLiteral("dry_sequence_breakers")).toArray())
            p.dry_sequence_breakers.push_back(s.toString().toStdString());
    }
    grammarFromJson(o, p);
    return p;
}

// --- JSON ----------------------------------------------------------------------------------------

QJsonObject Conversation::toJson() const {
    // The nodes depth-first, so a parent always comes before its children; indices into that list.
    const std::map<int, Node> tree = fullTree();
    QVector<int> order;
    QVector<int> stack(tree.at(kRoot).children.rbegin(), tree.at(kRoot).children.rend());
    while (!stack.isEmpty()) {
        const int id = stack.takeLast();
        order.append(id);
        const QVector<int>& children = tree.at(id).children;
        for (auto it = children.rbegin(); it != children.rend(); ++it) stack.append(*it);
    }
    std::map<int, int> indexOf;
    for (int i = 0; i < order.size(); ++i) indexOf[order[i]] = i;
    QJsonArray nodes;
    for (int id : order) {
        const Node& n = tree.at(id);
        QJsonObject o = entryToJson(n.entry);
        o.insert(QStringLiteral("parent"), n.parent == kRoot ? -1 : indexOf.at(n.parent));
        if (n.active >= 0) o.insert(QStringLiteral("active"), indexOf.at(n.active));
        nodes.append(o);
    }
    const int rootActive = tree.at(kRoot).active;
    QJsonObject json{{QStringLiteral("format"), QStringLiteral("whitebox-conversation")},
                     {QStringLiteral("version"), kFormatVersion},
                     {QStringLiteral("title"), title},
                     {QStringLiteral("created"), isoDate(created)},
                     {QStringLiteral("updated"), isoDate(updated)},
                     {QStringLiteral("model"), modelName},
                     {QStringLiteral("system_prompt"), systemPrompt},
                     {QStringLiteral("sampling"), samplingToJson(sampling)},
                     {QStringLiteral("nodes"), nodes}};
    if (rootActive >= 0) json.insert(QStringLiteral("active"), indexOf.at(rootActive));
    return json;
}

std::optional<Conversation> Conversation::fromJson(const QJsonObject& json, QString* error) {
    if (json.value(QStringLiteral("format")).toString() != QLatin1String("whitebox-conversation")) {
        if (error) *error = QObject::tr("not a WhiteBox conversation file");
        return std::nullopt;
    }
    const int version = json.value(QStringLiteral("version")).toInt();
    if (version > kFormatVersion) {
        if (error) *error = QObject::tr("the file was written by a newer WhiteBox (format version %1)").arg(version);
        return std::nullopt;
    }
    Conversation c;
    c.modelName = json.value(QStringLiteral("model")).toString();
    c.systemPrompt = json.value(QStringLiteral("system_prompt")).toString();
    c.title = json.value(QStringLiteral("title")).toString();
    c.created = QDateTime::fromString(json.value(QStringLiteral("created")).toString(), Qt::ISODateWithMs);
    c.updated = QDateTime::fromString(json.value(QStringLiteral("updated")).toString(), Qt::ISODateWithMs);
    c.sampling = samplingFromJson(json.value(QStringLiteral("sampling")).toObject());
    if (!json.contains(QStringLiteral("nodes"))) {
        // Version 1: one path.
        for (const auto& v : json.value(QStringLiteral("messages")).toArray()) {
            ChatEntry m;
            if (!entryFromJson(v.toObject(), int(c.messages.size()) + 1, &m, error)) return std::nullopt;
            c.messages.append(m);
        }
        c.syncPath();
        return c;
    }
    const QJsonArray nodes = json.value(QStringLiteral("nodes")).toArray();
    QVector<int> activeOf(nodes.size() + 1, -1);  // by file index + 1 (0: the root)
    for (int i = 0; i < nodes.size(); ++i) {
        const QJsonObject o = nodes[i].toObject();
        const int parent = o.value(QStringLiteral("parent")).toInt(-2);
        if (parent < -1 || parent >= i) {
            if (error) *error = QObject::tr("message %1 names the parent %2, which does not come before it").arg(i + 1).arg(parent);
            return std::nullopt;
        }
        ChatEntry m;
        if (!entryFromJson(o, i + 1, &m, error)) return std::nullopt;
        // Node ids are file index + 1, so a parent's id is its index + 1 and the root's is 0.
        c.addNode(parent + 1, m);
        activeOf[i + 1] = o.value(QStringLiteral("active")).toInt(-1);
    }
    activeOf[0] = json.value(QStringLiteral("active")).toInt(-1);
    // addNode made each node's last child active; the file's choice replaces it when it is a child.
    for (auto& [id, node] : c.m_nodes) {
        const int chosen = activeOf[id] + 1;
        if (activeOf[id] >= 0 && node.children.contains(chosen)) node.active = chosen;
    }
    if (c.m_nodes[kRoot].active >= 0) c.extendPath(c.m_nodes[kRoot].active);
    return c;
}

bool Conversation::save(const QString& path, QString* error) const {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) {
        if (error) *error = file.errorString();
        return false;
    }
    // Compact: every token carries its candidates, which indentation would double.
    file.write(QJsonDocument(toJson()).toJson(QJsonDocument::Compact));
    if (!file.commit()) {
        if (error) *error = file.errorString();
        return false;
    }
    return true;
}

std::optional<Conversation> Conversation::load(const QString& path, QString* error) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        if (error) *error = file.errorString();
        return std::nullopt;
    }
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &parseError);
    if (doc.isNull() || !doc.isObject()) {
        if (error) *error = QObject::tr("invalid JSON: %1").arg(parseError.errorString());
        return std::nullopt;
    }
    return fromJson(doc.object(), error);
}
