#include "engine_types.h"

#include <QStringDecoder>

#include "chat_template_setting.h"
#include "model_summary.h"

void registerEngineTypes() {
    qRegisterMetaType<wb::TokenEvent>("wb::TokenEvent");
    qRegisterMetaType<wb::KvStats>("wb::KvStats");
    qRegisterMetaType<wb::DeviceMemory>("wb::DeviceMemory");
    qRegisterMetaType<wb::Timings>("wb::Timings");
    qRegisterMetaType<wb::SamplingParams>("wb::SamplingParams");
    qRegisterMetaType<AttentionBatch>("AttentionBatch");
    qRegisterMetaType<TokenInspectionPtr>("TokenInspectionPtr");
    qRegisterMetaType<TimingRecordPtr>("TimingRecordPtr");
    qRegisterMetaType<ChatMessages>("ChatMessages");
    qRegisterMetaType<PromptInfo>("PromptInfo");
    qRegisterMetaType<ChatTemplateInfo>("ChatTemplateInfo");
    qRegisterMetaType<ChatTemplateSetting>("ChatTemplateSetting");
    qRegisterMetaType<GenerationSummary>("GenerationSummary");
    qRegisterMetaType<wb::ContextCut>("wb::ContextCut");
    qRegisterMetaType<wb::GrammarRefusal>("wb::GrammarRefusal");
    qRegisterMetaType<ModelSummary>("ModelSummary");
    qRegisterMetaType<ComparisonMemory>("ComparisonMemory");
    qRegisterMetaType<InspectedTracePtr>("InspectedTracePtr");
    qRegisterMetaType<ModelCompareResultPtr>("ModelCompareResultPtr");
}

QString tokenText(const std::string& bytes) {
    QString out;
    size_t i = 0;
    while (i < bytes.size()) {
        // The character the lead byte announces when its bytes are valid UTF-8, else one escaped byte.
        const unsigned char b = static_cast<unsigned char>(bytes[i]);
        const size_t len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
        if (len > 0 && i + len <= bytes.size()) {
            QStringDecoder decode(QStringDecoder::Utf8, QStringDecoder::Flag::Stateless);
            const QString ch = decode(QByteArrayView(bytes.data() + i, qsizetype(len)));
            if (!decode.hasError()) {
                out += ch;
                i += len;
                continue;
            }
        }
        out += QStringLiteral("\\x") + QString::number(uint(b), 16).toUpper().rightJustified(2, QLatin1Char('0'));
        ++i;
    }
    return out;
}

QString quotedPiece(QString s) {
    s.replace(QLatin1Char('\n'), QStringLiteral("↵"));
    return s.isEmpty() ? QStringLiteral("∅") : QLatin1Char('\'') + s + QLatin1Char('\'');
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
