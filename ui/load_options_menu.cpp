#include "load_options_menu.h"

#include <QAction>
#include <QActionGroup>
#include <QMenu>
#include <QThread>

#include "app_settings.h"
#include "chat_controller.h"
#include "engine/backend.h"
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
    // The saved options loaded a model last time, but not necessarily on this machine (a GPU
    // removed, another model): they become the working ones only once a load succeeds with them.
    apply(saved);
    connect(m_controller, &ChatController::loadingChanged, this, [this](bool loading) {
        // A choice made during a load would be credited to that load's outcome.
        for (QMenu* m : {m_backendMenu, m_contextMenu, m_threadsMenu}) m->setEnabled(!loading);
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

    for (QActionGroup* g : {m_backendGroup, m_contextGroup, m_threadsGroup}) connect(g, &QActionGroup::triggered, this, &LoadOptionsMenu::choose);
}

LoadOptions LoadOptionsMenu::current() const {
    return {m_controller->backend(), m_controller->contextSize(), m_controller->threads()};
}

void LoadOptionsMenu::apply(const LoadOptions& o) {
    m_controller->setBackend(o.backend);
    m_controller->setContextSize(o.contextSize);
    m_controller->setThreads(o.threads);
    tick(o);
}

void LoadOptionsMenu::tick(const LoadOptions& o) {
    for (QAction* a : m_backendGroup->actions()) a->setChecked(a->data().toString() == o.backend);
    for (QAction* a : m_contextGroup->actions()) a->setChecked(a->data().toInt() == o.contextSize);
    for (QAction* a : m_threadsGroup->actions()) a->setChecked(a->data().toInt() == o.threads);
}

void LoadOptionsMenu::choose() {
    LoadOptions o;
    o.backend = m_backendGroup->checkedAction() ? m_backendGroup->checkedAction()->data().toString() : m_working.backend;
    o.contextSize = m_contextGroup->checkedAction() ? m_contextGroup->checkedAction()->data().toInt() : m_working.contextSize;
    o.threads = m_threadsGroup->checkedAction() ? m_threadsGroup->checkedAction()->data().toInt() : m_working.threads;
    if (o == current()) return;
    apply(o);
    // Without a model the choice waits for the next load, which decides whether it is kept.
    if (m_controller->hasModel() && !m_controller->isLoading()) m_controller->loadModel(m_controller->model().path);
}

void LoadOptionsMenu::handleModelLoaded(const ModelSummary& summary) {
    m_working = current();
    AppSettings::setBackend(m_working.backend);
    AppSettings::setContextSize(m_working.contextSize);
    AppSettings::setThreads(m_working.threads);
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
    return parts.join(QStringLiteral(", "));
}
