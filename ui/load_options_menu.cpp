#include "load_options_menu.h"

#include <QAction>
#include <QActionGroup>
#include <QMenu>
#include <QThread>

#include "app_settings.h"
#include "chat_controller.h"
#include "engine/backend.h"
#include "kv/kv_types.h"
#include "model_summary.h"
#include "util/error.h"

namespace {

const int kContextSizes[] = {0, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072};

QList<int> threadChoices(int cores) {
    QList<int> out;
    for (int n = 1; n <= cores; n = n < 4 ? n + 1 : n * 2) out << n;
    if (out.isEmpty() || out.last() != cores) out << cores;
    return out;
}

QAction* checkable(QMenu* menu, QActionGroup* group, const QString& text, const QVariant& data) {
    QAction* a = menu->addAction(text);
    a->setData(data);
    a->setCheckable(true);
    group->addAction(a);
    return a;
}

}  // namespace

LoadOptionsMenu::LoadOptionsMenu(ChatController* controller, QWidget* parent) : QObject(parent), m_controller(controller) {
    buildMenus(parent);
    LoadOptions saved;
    saved.backend = AppSettings::backend();
    try {
        (void)wb::parse_backend_kind(saved.backend.toStdString());  // the engine's names, the engine's parser
    } catch (const wb::Error& e) {
        // A name from another version or a hand-edited file: said, not silently taken as auto.
        m_savedProblem = tr("The saved backend was not used (%1); the automatic backend is used instead.")
                             .arg(QString::fromUtf8(e.what()));
        saved.backend = QStringLiteral("auto");
    }
    saved.contextSize = AppSettings::contextSize();
    saved.threads = AppSettings::threads();
    if (saved.threads > QThread::idealThreadCount()) saved.threads = 0;
    for (auto [type, stored] : {std::pair{&saved.cacheTypeK, AppSettings::cacheTypeK()}, {&saved.cacheTypeV, AppSettings::cacheTypeV()}}) {
        try {
            *type = QString::fromLatin1(wb::kv_type_name(wb::kv_type_from_name(stored.toStdString())));
        } catch (const wb::Error& e) {
            m_savedProblem = tr("The saved KV cache type was not used (%1); f16 is used instead.").arg(QString::fromUtf8(e.what()));
        }
    }
    // The saved options loaded a model last time, but not necessarily on this machine (a GPU
    // removed, another model): they become the working ones only once a load succeeds with them.
    apply(saved);
    connect(m_controller, &ChatController::loadingChanged, this, [this](bool loading) {
        // A choice made during a load would be credited to that load's outcome.
        for (QMenu* m : {m_backendMenu, m_contextMenu, m_threadsMenu, m_kvMenu}) m->setEnabled(!loading);
    });
}

void LoadOptionsMenu::buildMenus(QWidget* parent) {
    m_backendMenu = new QMenu(tr("Backend"), parent);
    m_backendGroup = new QActionGroup(this);
    checkable(m_backendMenu, m_backendGroup, tr("auto (CUDA if usable, else CPU)"), QStringLiteral("auto"));
    checkable(m_backendMenu, m_backendGroup, tr("CPU"), QStringLiteral("cpu"));
    checkable(m_backendMenu, m_backendGroup, tr("CUDA"), QStringLiteral("cuda"));

    m_contextMenu = new QMenu(tr("Context size"), parent);
    m_contextGroup = new QActionGroup(this);
    for (int n : kContextSizes)
        checkable(m_contextMenu, m_contextGroup, n == 0 ? tr("model default (≤ 4096)") : tr("%1 tokens").arg(n), n);

    m_threadsMenu = new QMenu(tr("Threads"), parent);
    m_threadsGroup = new QActionGroup(this);
    const int cores = std::max(1, QThread::idealThreadCount());
    checkable(m_threadsMenu, m_threadsGroup, tr("all cores (%1)").arg(cores), 0);
    for (int n : threadChoices(cores)) checkable(m_threadsMenu, m_threadsGroup, tr("%n thread(s)", nullptr, n), n);

    // Keys and values separately, as llama.cpp's --cache-type-k / --cache-type-v.
    m_kvMenu = new QMenu(tr("KV cache"), parent);
    m_cacheKGroup = new QActionGroup(this);
    m_cacheVGroup = new QActionGroup(this);
    for (auto [group, title] : {std::pair{m_cacheKGroup, tr("Keys")}, {m_cacheVGroup, tr("Values")}}) {
        m_kvMenu->addSection(title);
        for (wb::KvType t : {wb::KvType::F16, wb::KvType::Q8_0, wb::KvType::Q4_0}) {
            const QString name = QString::fromLatin1(wb::kv_type_name(t));
            const QString text = t == wb::KvType::F16 ? tr("%1 (16 bits per value, default)").arg(name)
                                                      : tr("%1 (%2 bits per value)").arg(name).arg(wb::kv_type_bits(t));
            checkable(m_kvMenu, group, text, name);
        }
    }
    m_kvMenu->setToolTipsVisible(true);
    m_kvMenu->setToolTip(tr("A quantized cache takes about half (q8_0) or a quarter (q4_0) of the memory per token, "
                            "on the CPU and the GPU alike."));

    for (QActionGroup* g : {m_backendGroup, m_contextGroup, m_threadsGroup, m_cacheKGroup, m_cacheVGroup})
        connect(g, &QActionGroup::triggered, this, &LoadOptionsMenu::choose);
}

LoadOptions LoadOptionsMenu::current() const {
    return {m_controller->backend(), m_controller->contextSize(), m_controller->threads(), m_controller->cacheTypeK(),
            m_controller->cacheTypeV()};
}

void LoadOptionsMenu::apply(const LoadOptions& o) {
    m_controller->setBackend(o.backend);
    m_controller->setContextSize(o.contextSize);
    m_controller->setThreads(o.threads);
    m_controller->setCacheTypes(o.cacheTypeK, o.cacheTypeV);
    tick(o);
}

void LoadOptionsMenu::tick(const LoadOptions& o) {
    for (QAction* a : m_backendGroup->actions()) a->setChecked(a->data().toString() == o.backend);
    for (QAction* a : m_contextGroup->actions()) a->setChecked(a->data().toInt() == o.contextSize);
    for (QAction* a : m_threadsGroup->actions()) a->setChecked(a->data().toInt() == o.threads);
    for (QAction* a : m_cacheKGroup->actions()) a->setChecked(a->data().toString() == o.cacheTypeK);
    for (QAction* a : m_cacheVGroup->actions()) a->setChecked(a->data().toString() == o.cacheTypeV);
}

void LoadOptionsMenu::choose() {
    LoadOptions o;
    o.backend = m_backendGroup->checkedAction() ? m_backendGroup->checkedAction()->data().toString() : m_working.backend;
    o.contextSize = m_contextGroup->checkedAction() ? m_contextGroup->checkedAction()->data().toInt() : m_working.contextSize;
    o.threads = m_threadsGroup->checkedAction() ? m_threadsGroup->checkedAction()->data().toInt() : m_working.threads;
    o.cacheTypeK = m_cacheKGroup->checkedAction() ? m_cacheKGroup->checkedAction()->data().toString() : m_working.cacheTypeK;
    o.cacheTypeV = m_cacheVGroup->checkedAction() ? m_cacheVGroup->checkedAction()->data().toString() : m_working.cacheTypeV;
    if (o == current()) return;
    apply(o);
    // Without a model the choice waits for the next load, which decides whether it is kept; so does
    // it while a remote engine is in use (its "path" is the server's URL, no model to reload).
    if (m_controller->hasModel() && !m_controller->isLoading() && !m_controller->isRemote())
        m_controller->loadModel(m_controller->model().path);
}

void LoadOptionsMenu::handleModelLoaded(const ModelSummary& summary) {
    // A remote engine used none of these: nothing is proven to work, nothing saved; a choice made
    // meanwhile waits for the next local load.
    if (summary.isRemote()) return;
    m_working = current();
    AppSettings::setBackend(m_working.backend);
    AppSettings::setContextSize(m_working.contextSize);
    AppSettings::setThreads(m_working.threads);
    AppSettings::setCacheTypeK(m_working.cacheTypeK);
    AppSettings::setCacheTypeV(m_working.cacheTypeV);
    tick(m_working);
    // Sizes beyond the training context are refused by the engine: they are not offered.
    for (QAction* a : m_contextGroup->actions()) {
        const int n = a->data().toInt();
        a->setVisible(n == 0 || summary.contextTrain <= 0 || n <= summary.contextTrain);
    }
}

QString LoadOptionsMenu::revertAfterFailure(const QString& path) {
    const LoadOptions failed = current();
    if (failed == m_working) return {};
    apply(m_working);
    const bool loaded = m_controller->hasModel() && m_controller->model().path == path;
    if (!loaded) m_controller->loadModel(path);
    const QString what = describe(failed, m_working), kept = describe(m_working, failed);
    return loaded ? tr("Not kept: %1. The model stays loaded with %2.").arg(what, kept)
                  : tr("Not kept: %1. Loading it again with %2.").arg(what, kept);
}

QString LoadOptionsMenu::describe(const LoadOptions& o, const LoadOptions& other) {
    QStringList parts;
    if (o.backend != other.backend)
        parts << (o.backend == QLatin1String("auto") ? tr("the automatic backend") : tr("the %1 backend").arg(o.backend.toUpper()));
    if (o.contextSize != other.contextSize)
        parts << (o.contextSize > 0 ? tr("a %1-token context").arg(o.contextSize) : tr("the model's default context"));
    if (o.threads != other.threads) parts << (o.threads > 0 ? tr("%n thread(s)", nullptr, o.threads) : tr("all cores"));
    if (o.cacheTypeK != other.cacheTypeK) parts << tr("%1 keys in the KV cache").arg(o.cacheTypeK);
    if (o.cacheTypeV != other.cacheTypeV) parts << tr("%1 values in the KV cache").arg(o.cacheTypeV);
    return parts.join(QStringLiteral(", "));
}
