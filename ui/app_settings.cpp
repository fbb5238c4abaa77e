#include "app_settings.h"

#include <QCryptographicHash>
#include <QFileInfo>
#include <QJsonDocument>
#include <QSettings>

#include "chat_template_setting.h"
#include "conversation.h"

namespace {

const QString kBackend = QStringLiteral("backend");
const QString kContextSize = QStringLiteral("contextSize");
const QString kThreads = QStringLiteral("threads");
const QString kCacheTypeK = QStringLiteral("kvCache/typeK");
const QString kCacheTypeV = QStringLiteral("kvCache/typeV");
const QString kContextPolicy = QStringLiteral("chat/contextPolicy");
const QString kTheme = QStringLiteral("theme");
const QString kSampling = QStringLiteral("sampling/params");
const QString kSamplingPreset = QStringLiteral("sampling/preset");
const QString kSamplingLogitBias = QStringLiteral("sampling/logitBias");
const QString kSystemPrompt = QStringLiteral("chat/systemPrompt");
const QString kColourTokens = QStringLiteral("chat/colourTokens");
const QString kDrafts = QStringLiteral("chat/drafts");
// The single draft key of the version before drafts had owners.
const QString kLegacyDraft = QStringLiteral("chat/draft");
const QString kCaptureAll = QStringLiteral("capture/allLayers");
const QString kAttentionLayer = QStringLiteral("capture/layer");
const QString kCaptureBudget = QStringLiteral("capture/budgetMiB");
const QString kRemoteUrl = QStringLiteral("remote/url");
const QString kRemoteApiKey = QStringLiteral("remote/apiKey");
const QString kRemoteModel = QStringLiteral("remote/model");

void set(const QString& key, const QVariant& value) {
    QSettings().setValue(key, value);
}

QVariant get(const QString& key, const QVariant& fallback = {}) {
    return QSettings().value(key, fallback);
}

}  // namespace

QString AppSettings::backend() { return get(kBackend, QStringLiteral("auto")).toString(); }
void AppSettings::setBackend(const QString& backend) { set(kBackend, backend); }
int AppSettings::contextSize() { return get(kContextSize, 0).toInt(); }
void AppSettings::setContextSize(int tokens) { set(kContextSize, tokens); }
int AppSettings::threads() { return get(kThreads, 0).toInt(); }
void AppSettings::setThreads(int threads) { set(kThreads, threads); }
QString AppSettings::cacheTypeK() { return get(kCacheTypeK, QStringLiteral("f16")).toString(); }
void AppSettings::setCacheTypeK(const QString& type) { set(kCacheTypeK, type); }
QString AppSettings::cacheTypeV() { return get(kCacheTypeV, QStringLiteral("f16")).toString(); }
void AppSettings::setCacheTypeV(const QString& type) { set(kCacheTypeV, type); }
QString AppSettings::contextPolicy() { return get(kContextPolicy, QStringLiteral("shift")).toString(); }
void AppSettings::setContextPolicy(const QString& name) { set(kContextPolicy, name); }
QString AppSettings::theme() { return get(kTheme, QStringLiteral("system")).toString(); }
void AppSettings::setTheme(const QString& name) { set(kTheme, name); }

bool AppSettings::hasSampling() { return QSettings().contains(kSampling); }

wb::SamplingParams AppSettings::sampling() {
    // The same JSON as a saved conversation: the 64-bit seed is kept as a string, and knobs added
    // later get their defaults when an older entry is read.
    return samplingFromJson(QJsonDocument::fromJson(get(kSampling).toByteArray()).object());
}

void AppSettings::setSampling(const wb::SamplingParams& params) {
    set(kSampling, QJsonDocument(samplingToJson(params)).toJson(QJsonDocument::Compact));
}

QString AppSettings::samplingLogitBias() { return get(kSamplingLogitBias).toString(); }
void AppSettings::setSamplingLogitBias(const QString& text) { set(kSamplingLogitBias, text); }
QString AppSettings::samplingPreset() { return get(kSamplingPreset, QStringLiteral("Balanced")).toString(); }
void AppSettings::setSamplingPreset(const QString& name) { set(kSamplingPreset, name); }
QString AppSettings::systemPrompt() { return get(kSystemPrompt).toString(); }
QStringList AppSettings::draftOwners() {
    QSettings s;
    s.beginGroup(kDrafts);
    return s.childKeys();
}
QString AppSettings::legacyMessageDraft() { return get(kLegacyDraft).toString(); }
void AppSettings::clearLegacyMessageDraft() { QSettings().remove(kLegacyDraft); }
QString AppSettings::messageDraft(const QString& owner) { return get(kDrafts + '/' + owner).toString(); }
void AppSettings::setMessageDraft(const QString& owner, const QString& text) {
    if (text.isEmpty()) {
        QSettings().remove(kDrafts + '/' + owner);
        return;
    }
    set(kDrafts + '/' + owner, text);
}
void AppSettings::setSystemPrompt(const QString& prompt) { set(kSystemPrompt, prompt); }
bool AppSettings::colourTokens() { return get(kColourTokens, false).toBool(); }
void AppSettings::setColourTokens(bool on) { set(kColourTokens, on); }
bool AppSettings::captureAllLayers() { return get(kCaptureAll, false).toBool(); }
void AppSettings::setCaptureAllLayers(bool on) { set(kCaptureAll, on); }
int AppSettings::captureBudgetMiB() { return get(kCaptureBudget, 256).toInt(); }
void AppSettings::setCaptureBudgetMiB(int mib) { set(kCaptureBudget, mib); }
int AppSettings::attentionLayer() { return get(kAttentionLayer, 0).toInt(); }
void AppSettings::setAttentionLayer(int layer) { set(kAttentionLayer, layer); }

QString AppSettings::layoutKey(const QRect& g) {
    return QStringLiteral("layout/%1x%2+%3+%4").arg(g.width()).arg(g.height()).arg(g.x()).arg(g.y());
}

QByteArray AppSettings::windowGeometry(const QString& key) {
    return get(key + QStringLiteral("/geometry")).toByteArray();
}

QByteArray AppSettings::windowState(const QString& key) {
    return get(key + QStringLiteral("/state")).toByteArray();
}

void AppSettings::setWindowLayout(const QString& key, const QByteArray& geometry, const QByteArray& state) {
    QSettings s;
    s.setValue(key + QStringLiteral("/geometry"), geometry);
    s.setValue(key + QStringLiteral("/state"), state);
}

namespace {

// One group per model file, named by a hash of its absolute path (a path's slashes would make groups).
QString chatTemplateGroup(const QString& modelPath) {
    const QByteArray key = QCryptographicHash::hash(QFileInfo(modelPath).absoluteFilePath().toUtf8(), QCryptographicHash::Sha1);
    return QStringLiteral("chatTemplates/") + QString::fromLatin1(key.toHex());
}

}  // namespace

ChatTemplateSetting AppSettings::chatTemplate(const QString& modelPath) {
    QSettings s;
    s.beginGroup(chatTemplateGroup(modelPath));
    ChatTemplateSetting t;
    t.source = s.value(QStringLiteral("source")).toString();
    t.origin = s.value(QStringLiteral("origin")).toString();
    t.builtin = s.value(QStringLiteral("builtin")).toString();
    return t;
}

void AppSettings::setChatTemplate(const QString& modelPath, const ChatTemplateSetting& setting) {
    QSettings s;
    s.remove(chatTemplateGroup(modelPath));
    if (setting.isEmpty()) return;
    s.beginGroup(chatTemplateGroup(modelPath));
    s.setValue(QStringLiteral("model"), QFileInfo(modelPath).absoluteFilePath());  // for a reader of the file
    s.setValue(QStringLiteral("source"), setting.source);
    s.setValue(QStringLiteral("origin"), setting.origin);
    s.setValue(QStringLiteral("builtin"), setting.builtin);
}

AppSettings::RemoteEngine AppSettings::remoteEngine() {
    return {get(kRemoteUrl).toString(), get(kRemoteApiKey).toString(), get(kRemoteModel).toString()};
}

void AppSettings::setRemoteEngine(const RemoteEngine& engine) {
    set(kRemoteUrl, engine.url);
    set(kRemoteApiKey, engine.apiKey);
    set(kRemoteModel, engine.model);
}
