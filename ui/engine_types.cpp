#include "engine_types.h"

#include "chat_template_setting.h"
#include "model_summary.h"

void registerEngineTypes() {
    qRegisterMetaType<wb::TokenEvent>("wb::TokenEvent");
    qRegisterMetaType<wb::KvStats>("wb::KvStats");
    qRegisterMetaType<wb::Timings>("wb::Timings");
    qRegisterMetaType<wb::SamplingParams>("wb::SamplingParams");
    qRegisterMetaType<AttentionBatch>("AttentionBatch");
    qRegisterMetaType<ChatMessages>("ChatMessages");
    qRegisterMetaType<PromptInfo>("PromptInfo");
    qRegisterMetaType<ChatTemplateInfo>("ChatTemplateInfo");
    qRegisterMetaType<ChatTemplateSetting>("ChatTemplateSetting");
    qRegisterMetaType<GenerationSummary>("GenerationSummary");
    qRegisterMetaType<ModelSummary>("ModelSummary");
}

QString formatBytes(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024.0 && u < 4) {
        bytes /= 1024.0;
        ++u;
    }
    return u == 0 ? QStringLiteral("%1 B").arg(qint64(bytes)) : QStringLiteral("%1 %2").arg(bytes, 0, 'f', 1).arg(units[u]);
}
