#include "sampling_presets.h"

#include <QJsonDocument>
#include <QSettings>

#include "conversation.h"
#include "grammar_controls.h"

namespace {

const char* kGroup = "samplingPresets";
const char* kVaried = "Varied (DRY + XTC)";
const char* kJsonOutput = "JSON output";

wb::SamplingParams builtin(const QString& name) {
    wb::SamplingParams p;
    if (name == QLatin1String("Precise")) {
        // Near-deterministic answers: low temperature, a short list of candidates.
        p.temperature = 0.2f;
        p.top_k = 20;
        p.top_p = 0.9f;
        p.min_p = 0.1f;
        p.repeat_penalty = 1.1f;
    } else if (name == QLatin1String("Creative")) {
        // Flatter distribution and a wide candidate list; presence penalty against loops.
        p.temperature = 1.1f;
        p.top_k = 100;
        p.top_p = 0.98f;
        p.min_p = 0.02f;
        p.presence_penalty = 0.3f;
        // DRY at the strength its author suggests, against the loops a flatter distribution falls into.
        p.dry_multiplier = 0.8f;
    } else if (name == QLatin1String(kVaried)) {
        // Against loops and blandness at the engine's other defaults: DRY at its author's suggested
        // strength, and XTC removing the top choices half the time (the values its author suggests).
        p.dry_multiplier = 0.8f;
        p.dry_base = 1.75f;
        p.dry_allowed_length = 2;
        p.xtc_probability = 0.5f;
        p.xtc_threshold = 0.1f;
    } else if (name == QLatin1String(kJsonOutput)) {
        // Any JSON object; a low temperature, since inside the structure a likely token is nearly
        // always the right one, and the grammar handles the rest.
        p.temperature = 0.3f;
        QString text;
        if (GrammarControls::findExample("Any JSON object", &p.grammar_mode, &text)) {
            p.grammar_source = text.toStdString();
            p.grammar = GrammarControls::compileSource(p.grammar_mode, p.grammar_source);
        }
    }
    // Balanced: the engine's defaults (llama.cpp's).
    return p;
}

}  // namespace

QStringList SamplingPresets::builtinNames() {
    QStringList names = {QStringLiteral("Precise"), QStringLiteral("Balanced"), QStringLiteral("Creative"),
                         QString::fromLatin1(kVaried)};
    // Its grammar is a JSON Schema: not offered by a build without the converter.
    GrammarControls::Mode mode;
    QString text;
    if (GrammarControls::findExample("Any JSON object", &mode, &text)) names << QString::fromLatin1(kJsonOutput);
    return names;
}

bool SamplingPresets::isBuiltin(const QString& name) {
    return builtinNames().contains(name);
}

QStringList SamplingPresets::names() {
    QSettings s;
    s.beginGroup(QLatin1String(kGroup));
    QStringList user = s.childKeys();
    user.sort();
    return builtinNames() + user;
}

bool SamplingPresets::find(const QString& name, wb::SamplingParams* params) {
    if (isBuiltin(name)) {
        *params = builtin(name);
        return true;
    }
    QSettings s;
    s.beginGroup(QLatin1String(kGroup));
    if (!s.contains(name)) return false;
    *params = samplingFromJson(QJsonDocument::fromJson(s.value(name).toByteArray()).object());
    return true;
}

void SamplingPresets::saveUser(const QString& name, const wb::SamplingParams& params) {
    QSettings s;
    s.beginGroup(QLatin1String(kGroup));
    s.setValue(name, QJsonDocument(samplingToJson(params)).toJson(QJsonDocument::Compact));
}

void SamplingPresets::removeUser(const QString& name) {
    QSettings s;
    s.beginGroup(QLatin1String(kGroup));
    s.remove(name);
}
