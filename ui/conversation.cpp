#include "conversation.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

namespace {

constexpr int kFormatVersion = 1;

QJsonObject tokenToJson(const TokenRecord& t) {
    return QJsonObject{{QStringLiteral("id"), t.id}, {QStringLiteral("piece"), t.piece}, {QStringLiteral("p"), double(t.p)},
                       {QStringLiteral("pos"), t.position}};
}

TokenRecord tokenFromJson(const QJsonObject& o) {
    TokenRecord t;
    t.id = o.value(QStringLiteral("id")).toInt();
    t.piece = o.value(QStringLiteral("piece")).toString();
    t.p = float(o.value(QStringLiteral("p")).toDouble());
    t.position = o.value(QStringLiteral("pos")).toInt(-1);
    return t;
}

}  // namespace

ChatMessages Conversation::toEngineMessages() const {
    ChatMessages out;
    if (!systemPrompt.isEmpty()) out.push_back({"system", systemPrompt.toStdString()});
    for (const ChatEntry& m : messages) out.push_back({m.role.toStdString(), m.content.toStdString()});
    return out;
}

QJsonObject samplingToJson(const wb::SamplingParams& p) {
    QJsonArray stops;
    for (const auto& s : p.stop) stops.append(QString::fromStdString(s));
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
    return p;
}

QJsonObject Conversation::toJson() const {
    QJsonArray msgs;
    for (const ChatEntry& m : messages) {
        QJsonObject o{{QStringLiteral("role"), m.role}, {QStringLiteral("content"), m.content}};
        if (!m.stopReason.isEmpty()) o.insert(QStringLiteral("stop_reason"), m.stopReason);
        if (!m.tokens.isEmpty()) {
            QJsonArray toks;
            for (const TokenRecord& t : m.tokens) toks.append(tokenToJson(t));
            o.insert(QStringLiteral("tokens"), toks);
        }
        msgs.append(o);
    }
    return QJsonObject{{QStringLiteral("format"), QStringLiteral("whitebox-conversation")},
                       {QStringLiteral("version"), kFormatVersion},
                       {QStringLiteral("model"), modelName},
                       {QStringLiteral("system_prompt"), systemPrompt},
                       {QStringLiteral("sampling"), samplingToJson(sampling)},
                       {QStringLiteral("messages"), msgs}};
}

std::optional<Conversation> Conversation::fromJson(const QJsonObject& json, QString* error) {
    if (json.value(QStringLiteral("format")).toString() != QLatin1String("whitebox-conversation")) {
        if (error) *error = QObject::tr("not a WhiteBox conversation file");
        return std::nullopt;
    }
    if (json.value(QStringLiteral("version")).toInt() > kFormatVersion) {
        if (error) *error = QObject::tr("the file was written by a newer WhiteBox (format version %1)")
                                .arg(json.value(QStringLiteral("version")).toInt());
        return std::nullopt;
    }
    Conversation c;
    c.modelName = json.value(QStringLiteral("model")).toString();
    c.systemPrompt = json.value(QStringLiteral("system_prompt")).toString();
    c.sampling = samplingFromJson(json.value(QStringLiteral("sampling")).toObject());
    for (const auto& v : json.value(QStringLiteral("messages")).toArray()) {
        const QJsonObject o = v.toObject();
        ChatEntry m;
        m.role = o.value(QStringLiteral("role")).toString();
        if (m.role != QLatin1String("user") && m.role != QLatin1String("assistant")) {
            if (error) *error = QObject::tr("message %1 has the unknown role \"%2\"").arg(c.messages.size() + 1).arg(m.role);
            return std::nullopt;
        }
        m.content = o.value(QStringLiteral("content")).toString();
        m.stopReason = o.value(QStringLiteral("stop_reason")).toString();
        for (const auto& t : o.value(QStringLiteral("tokens")).toArray()) m.tokens.append(tokenFromJson(t.toObject()));
        c.messages.append(m);
    }
    return c;
}

bool Conversation::save(const QString& path, QString* error) const {
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly)) {
        if (error) *error = file.errorString();
        return false;
    }
    file.write(QJsonDocument(toJson()).toJson(QJsonDocument::Indented));
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
