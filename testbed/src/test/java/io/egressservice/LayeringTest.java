package io.egressservice;

import static com.tngtech.archunit.core.domain.JavaCall.Predicates.target;
import static com.tngtech.archunit.core.domain.properties.HasName.Predicates.name;
import static com.tngtech.archunit.core.domain.properties.HasOwner.Predicates.With.owner;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.core.importer.Location;
import com.tngtech.archunit.junit.AnalyzeClasses;
import com.tngtech.archunit.junit.ArchTest;
import com.tngtech.archunit.lang.ArchRule;
import com.tngtech.archunit.library.Architectures.LayeredArchitecture;
import java.time.Clock;
import java.util.List;

/**
 * The packages' layering, as rules over the main code's bytecode (tests may reach anywhere). Each rule says what a
 * reader may rely on: the planner is a pure function of its inputs, the netlink library stands on its own, and no
 * package reaches into one above it. agent/README.md lists the ranks with what each package does.
 */
@AnalyzeClasses(packages = "io.egressservice", importOptions = LayeringTest.MainCode.class)
class LayeringTest {
  /**
   * Every module's main classes, whether Maven hands them over as a directory ({@code mvn test}) or as the module's
   * jar ({@code mvn verify}); never the tests' classes, in a directory or in a module's test-jar.
   */
  static final class MainCode implements ImportOption {
    @Override
    public boolean includes(Location location) {
      return !location.contains("/test-classes/") && !location.contains("-tests.jar");
    }
  }

  /** One rank of the layering: its packages may use their own rank and those below, never one above. */
  record Layer(String name, String... packages) {}

  /**
   * Bottom to top, as today's imports have it. Within a rank packages may use each other (no cycles, though).
   * The generated EgressServicePolicy model (api module, from crds/) is a value model like org.ovn.k8s.v1;
   * ip and netlink are the reusable kernel library; the support packages (logging, health endpoints, lifecycle,
   * build info, text: escaping what others wrote for where it is printed) use nothing of ours; the reconcile loop
   * (triggers, pacing, resync, backoff) that controller and allocator share uses nothing of ours either; model is the
   * vocabulary everyone shares (ObjectRef, PlanConfig, RuleMode); kernel is the port to the kernel and
   * kernel.linux its Linux side; plan is the pure planner; objects and nft its API-object and nftables renderings;
   * probe, dataplane and informers read or write the kernel (through the port) or the API; explain and metrics read
   * them; events writes the Kubernetes Events of both controller and allocator, which drive them; cli wires everything; testbed and demo (test infrastructure) on top.
   */
  static final List<Layer> BOTTOM_UP = List.of(
      new Layer("generated API model", "io.egressservice.v1alpha1.."),
      new Layer("ip", "io.egressservice.ip.."),
      new Layer("netlink", "io.egressservice.netlink.."),
      new Layer("support", "io.egressservice.logging..", "io.egressservice.health..", "io.egressservice.lifecycle..",
          "io.egressservice.buildinfo..", "io.egressservice.text.."),
      new Layer("reconcile loop", "io.egressservice.reconcile.."),
      new Layer("model", "io.egressservice.model.."),
      new Layer("kernel port", "io.egressservice.kernel.."),
      new Layer("plan", "io.egressservice.plan.."),
      new Layer("objects, nft", "io.egressservice.objects..", "io.egressservice.nft.."),
      new Layer("probe, dataplane, informers", "io.egressservice.probe..", "io.egressservice.dataplane..",
          "io.egressservice.informers.."),
      new Layer("explain, metrics", "io.egressservice.explain..", "io.egressservice.metrics.."),
      new Layer("events", "io.egressservice.events.."),
      new Layer("controller, allocator", "io.egressservice.controller..", "io.egressservice.allocator..",
          "io.egressservice.uninstall.."),
      new Layer("cli", "io.egressservice.cli.."),
      new Layer("testbed, demo", "io.egressservice.testbed..", "io.egressservice.demo.."));

  static LayeredArchitecture layering() {
    LayeredArchitecture rule = layeredArchitecture().consideringOnlyDependenciesInLayers()
        .ensureAllClassesAreContainedInArchitecture();
    for (Layer layer : BOTTOM_UP) {
      rule = rule.layer(layer.name()).definedBy(layer.packages());
    }
    for (int i = 0; i < BOTTOM_UP.size() - 1; i++) {
      String[] above = BOTTOM_UP.subList(i + 1, BOTTOM_UP.size()).stream().map(Layer::name).toArray(String[]::new);
      rule = rule.whereLayer(BOTTOM_UP.get(i).name()).mayOnlyBeAccessedByLayers(above);
    }
    return rule.whereLayer(BOTTOM_UP.get(BOTTOM_UP.size() - 1).name()).mayNotBeAccessedByAnyLayer();
  }

  @ArchTest
  static final ArchRule planImportsNothingOfTheKernel = noClasses()
      .that().resideInAPackage("io.egressservice.plan..")
      .should().dependOnClassesThat().resideInAnyPackage("io.egressservice.netlink..", "io.egressservice.nft..",
          "io.egressservice.dataplane..", "io.egressservice.kernel..", "io.egressservice.probe..", "com.sun.jna..")
      .because("the plan is computed from objects and settings alone; the dataplane applies it");

  @ArchTest
  static final ArchRule planImportsNothingOfTheApi = noClasses()
      .that().resideInAPackage("io.egressservice.plan..")
      .should().dependOnClassesThat().resideInAnyPackage("io.fabric8..", "org.ovn..", "io.egressservice.objects..",
          "io.egressservice.informers..", "io.egressservice.controller..", "io.egressservice.allocator..")
      .because("the plan reads plan records that objects/ builds from the API objects, not the API itself");

  @ArchTest
  static final ArchRule planReadsNoClock = noClasses()
      .that().resideInAPackage("io.egressservice.plan..")
      .should().dependOnClassesThat().areAssignableTo(Clock.class)
      .orShould().callMethod(System.class, "currentTimeMillis")
      .orShould().callMethod(System.class, "nanoTime")
      .orShould().callMethodWhere(target(name("now")).and(target(owner(JavaClass.Predicates.resideInAPackage(
          "java.time..")))))
      .because("the same inputs must give the same plan: time comes in as values (creation timestamps)");

  @ArchTest
  static final ArchRule ipImportsOnlyTheJdk = classes()
      .that().resideInAPackage("io.egressservice.ip..")
      .should().onlyDependOnClassesThat().resideInAnyPackage("io.egressservice.ip..", "java..")
      .because("addresses and prefixes are the netlink library's vocabulary, below everything");

  @ArchTest
  static final ArchRule netlinkImportsNothingOfTheAgent = classes()
      .that().resideInAPackage("io.egressservice.netlink..")
      .should().onlyDependOnClassesThat().resideInAnyPackage("io.egressservice.netlink..", "io.egressservice.ip..",
          "com.sun.jna..", "java..", "org.slf4j..")
      .because("the rtnetlink and conntrack layer is a library of its own: ip, JNA and the JDK");

  @ArchTest
  static final ArchRule modelImportsOnlyAddresses = classes()
      .that().resideInAPackage("io.egressservice.model..")
      .should().onlyDependOnClassesThat().resideInAnyPackage("io.egressservice.model..", "io.egressservice.ip..",
          "java..")
      .because("the shared vocabulary is values only: every layer may read it, so it may read nothing of theirs");

  @ArchTest
  static final ArchRule onlyTheWiringKnowsLinux = noClasses()
      .that().resideInAnyPackage("io.egressservice.nft..", "io.egressservice.dataplane..",
          "io.egressservice.controller..", "io.egressservice.allocator..", "io.egressservice.plan..",
          "io.egressservice.objects..", "io.egressservice.informers..", "io.egressservice.metrics..",
          "io.egressservice.explain..")
      .should().dependOnClassesThat().resideInAPackage("io.egressservice.kernel.linux..")
      .because("the agent's logic reads and writes the kernel through the port (kernel.Kernel); which kernel it is,"
          + " Linux or the tests' in-memory one, is chosen where the process is wired (cli, probe)");

  @ArchTest
  static final ArchRule theLogicOpensNoKernelSocket = noClasses()
      .that().resideInAnyPackage("io.egressservice.nft..", "io.egressservice.dataplane..",
          "io.egressservice.controller..")
      .should().dependOnClassesThat().haveFullyQualifiedName("io.egressservice.netlink.RtNetlink")
      .orShould().dependOnClassesThat().haveFullyQualifiedName("io.egressservice.netlink.NetnsThread")
      .because("rtnetlink and the namespace's thread are the port's Linux side; the logic gets them as"
          + " kernel.Kernel and netlink.Routing");

  @ArchTest
  static final ArchRule theReconcileLoopKnowsOnlyTime = classes()
      .that().resideInAPackage("io.egressservice.reconcile..")
      .should().onlyDependOnClassesThat().resideInAnyPackage("io.egressservice.reconcile..", "java..", "org.slf4j..")
      .because("the node agent and the allocator share the loop; what a reconcile is, is the function each gives it");

  @ArchTest
  static final ArchRule nothingImportsUpward = layering();

  @ArchTest
  static final ArchRule packagesHaveNoCycles = slices().matching("io.egressservice.(*)..").should().beFreeOfCycles();

  @ArchTest
  static final ArchRule oneLoggingApi = noClasses()
      .that().resideOutsideOfPackages("io.egressservice.logging..", "io.egressservice.netlink..")
      .should().dependOnClassesThat().resideInAPackage("java.util.logging..")
      .orShould().dependOnClassesThat().belongToAnyOf(System.Logger.class, System.LoggerFinder.class)
      .because("the agent logs through SLF4J alone; the logging package bridges the JDK's two APIs into it (for the"
          + " libraries that use them), and the netlink library logs through System.Logger so it brings no logging"
          + " framework of its own (netlink/README.md)");
}
