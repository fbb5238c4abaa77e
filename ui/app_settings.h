#pragma once
// Every setting the app keeps between runs, by name, in one place (QSettings under the organisation
// and application names set in main). Values are read once at start-up and written when they change;
// a load option (backend, context size, threads) is written only after a model loaded with it, so a
// choice that fails is never kept. Tests point QSettings at a temporary directory.
#include <QByteArray>
#include <QRect>
#include <QString>
#include <QStringList>

#include "sampling/sampling_params.h"

struct ChatTemplateSetting;

class AppSettings {
public:
    // Model loading: what the last successful load used.
    static QString backend();  // "auto", "cpu", "cuda"
    static void setBackend(const QString& backend);
    static int contextSize();  // 0 = the model's default
    static void setContextSize(int tokens);
    static int threads();      // 0 = all cores
    static void setThreads(int threads);
    // KV cache element types of keys and values: "f16", "q8_0", "q4_0" (kv/kv_types.h's names).
    static QString cacheTypeK();
    static void setCacheTypeK(const QString& type);
    static QString cacheTypeV();
    static void setCacheTypeV(const QString& type);

    // The remote engine (File > Connect to server…) of the last connection that succeeded: address,
    // API key (plain text, as every setting here; the dialog says so) and model name (empty: the
    // server's first). Written only after a connection worked, never for one that failed.
    struct RemoteEngine {
        QString url, apiKey, model;
    };
    static RemoteEngine remoteEngine();
    static void setRemoteEngine(const RemoteEngine& engine);

    // What a full context does: "shift" (default), "trim" or "stop" (wb::context_policy_name's names).
    static QString contextPolicy();
    static void setContextPolicy(const QString& name);

    static QString theme();    // Theme::modeName
    static void setTheme(const QString& name);

    // The sampling panel: the values and the preset they started from.
    static bool hasSampling();
    static wb::SamplingParams sampling();
    static void setSampling(const wb::SamplingParams& params);
    // The logit-bias field as typed (text keys; the params hold the ids they gave).
    static QString samplingLogitBias();
    static void setSamplingLogitBias(const QString& text);
    static QString samplingPreset();
    static void setSamplingPreset(const QString& name);

    static QString systemPrompt();
    static void setSystemPrompt(const QString& prompt);
    // The message typed and not sent, one per running window (`owner`: its MessageDrafts name, new each
    // run), so two windows never overwrite each other's draft. Empty removes.
    static QStringList draftOwners();
    static QString messageDraft(const QString& owner);
    static void setMessageDraft(const QString& owner, const QString& text);
    // The one draft an older version kept (taken over by MessageDrafts::adopt).
    static QString legacyMessageDraft();
    static void clearLegacyMessageDraft();
    static bool colourTokens();
    static void setColourTokens(bool on);

    // Attention capture: every layer, or only the one shown (and which one).
    static bool captureAllLayers();
    static void setCaptureAllLayers(bool on);
    // The most memory captured attention may take, in MiB (AttentionStore drops the oldest rows past it).
    static int captureBudgetMiB();
    static void setCaptureBudgetMiB(int mib);
    static int attentionLayer();
    static void setAttentionLayer(int layer);

    // Window geometry and dock layout, one entry per available screen geometry: a layout made on a
    // laptop screen does not squeeze or overflow the one made on a large monitor, and back.
    static QString layoutKey(const QRect& availableGeometry);
    static QByteArray windowGeometry(const QString& key);
    static QByteArray windowState(const QString& key);
    static void setWindowLayout(const QString& key, const QByteArray& geometry, const QByteArray& state);

    // A model file's chat template replacement (chat_template_setting.h); empty = its own template.
    static ChatTemplateSetting chatTemplate(const QString& modelPath);
    static void setChatTemplate(const QString& modelPath, const ChatTemplateSetting& setting);
};
